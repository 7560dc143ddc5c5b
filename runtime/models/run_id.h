// A training run's identity as its files store it: the "run_id" string of config.json, of a
// checkpoint's header and of each metrics record (runtime/training/trainer.cpp writes them).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace lmkit {

// The run id `stored` holds, or empty: a file written before runs had ids, or not by a run.
inline std::string run_id_in(const nlohmann::json& stored) {
  if (!stored.is_object()) return {};
  const auto id = stored.find("run_id");
  return id != stored.end() && id->is_string() ? id->get<std::string>() : std::string();
}

}  // namespace lmkit
