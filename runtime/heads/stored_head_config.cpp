#include "runtime/heads/stored_head_config.h"

#include "runtime/core/error.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

nlohmann::json completed_head_config(const nlohmann::json& stored) {
  if (!stored.is_object()) return stored;
  try {
    return read_head_config(stored);
  } catch (const ConfigError&) {
    return stored;  // compared as written: a difference is then reported, not hidden
  }
}

}  // namespace lmkit
