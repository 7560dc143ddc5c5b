// Thin: the three commands are lmkit.batch.submit, .status and .report (bindings/lua/batch.lua, one
// manifest reader); this file only passes the command line on.
#include "repl/batch_command.h"

#include "repl/script_runner.h"

namespace lmkit::repl {

int run_batch(const BatchOptions& options) {
  std::vector<config::Setting> settings;
  for (const auto& s : options.sets) settings.push_back(config::parse_setting(s));
  nlohmann::json o = options.options;
  o["recipe"] = options.recipe;
  o["sets"] = options.sets;
  return call_lmkit_function("lmkit.batch", "submit", o, settings, options.recipe);
}

int show_batch_status(const std::string& dir) {
  return call_lmkit_function("lmkit.batch", "status", nlohmann::json{{"dir", dir}}, {}, "");
}

int report_batch(const std::string& dir) {
  return call_lmkit_function("lmkit.batch", "report", nlohmann::json{{"dir", dir}}, {}, "");
}

}  // namespace lmkit::repl
