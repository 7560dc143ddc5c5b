#include "runtime/config/json_text.h"

namespace lmkit::config {

nlohmann::json parse_json_text(const std::string& text) {
  // nlohmann's parser itself is iterative; the callback stops it before a deep value is built.
  const nlohmann::json::parser_callback_t bound_depth = [](int depth, nlohmann::json::parse_event_t event,
                                                           nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxNestingDepth) {
      throw JsonTextError("nested deeper than " + std::to_string(kMaxNestingDepth) + " levels");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, bound_depth);
  } catch (const nlohmann::json::exception& e) {
    throw JsonTextError(e.what());
  }
}

}  // namespace lmkit::config
