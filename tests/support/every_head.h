// The every-head tests iterate over one configuration per registered example of every head kind
// (HeadKind::examples, or the kind's defaults): a kind registered anywhere — a test file included —
// is tested without being named here.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/heads/head_registry.h"

namespace lmkit::testing {

inline std::vector<nlohmann::json> all_heads() { return head_examples(); }

}  // namespace lmkit::testing
