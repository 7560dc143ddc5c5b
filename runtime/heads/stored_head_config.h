// A head config read back from a run's files (config.json, a checkpoint's header) compares with
// one made now only once both hold every option: an option added to a kind since the file was
// written is missing there, and the run it describes ran as its default does (MoS's floor = 0).
#pragma once
#include <nlohmann/json.hpp>

namespace lmkit {

// `stored` completed with its kind's defaults; unchanged when its kind is not registered here (a
// Lua head) or it does not read as its kind's config.
nlohmann::json completed_head_config(const nlohmann::json& stored);

}  // namespace lmkit
