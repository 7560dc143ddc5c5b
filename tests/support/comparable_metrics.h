// A run's metrics without their wall-clock fields and run id, which no two runs share: what tests compare when
// two runs (a resumed one, a rerun on a GPU) must agree bit for bit.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::testing {

inline std::vector<nlohmann::json> comparable_metrics(std::vector<nlohmann::json> records) {
  for (auto& r : records) {
    r.erase("tokens_per_s");
    r.erase("seconds");
    r.erase("epoch_seconds");
    r.erase("run_id");
  }
  return records;
}

}  // namespace lmkit::testing
