#include "runtime/config/json_text.h"

#include "runtime/core/error.h"

#include "runtime/core/number_text.h"

#include <cstdint>

namespace lmkit::config {

std::string dump_json(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_valid_utf8(const std::string& text) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra;
    std::uint32_t code;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, code = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= n) return false;  // cut short
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    // Overlong forms, surrogates and code points beyond U+10FFFF are not UTF-8.
    static const std::uint32_t kSmallest[] = {0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[extra] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return false;
    i += extra + 1;
  }
  return true;
}

nlohmann::json parse_json_text(const std::string& text) {
  // nlohmann's parser itself is iterative; the callback stops it before a deep value is built.
  const nlohmann::json::parser_callback_t bound_depth = [](int depth, nlohmann::json::parse_event_t event,
                                                           nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxNestingDepth) {
      throw JsonTextError("nested deeper than " + integer_text(kMaxNestingDepth) + " levels");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, bound_depth);
  } catch (const nlohmann::json::exception& e) {
    // Without nlohmann's "[json.exception.parse_error.101] " prefix: the reader adds the file.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) {
      what = what.substr(what.find("] ") + 2);
    }
    throw JsonTextError(what);
  }
}

std::string json_text(const nlohmann::json& value, std::optional<bool> pretty) {
  return pretty.value_or(false) ? value.dump(2) : value.dump();
}

nlohmann::json json_value(const std::string& text) {
  try {
    return parse_json_text(text);
  } catch (const JsonTextError& e) {
    throw UsageError(std::string("not valid JSON: ") + e.what());
  }
}

}  // namespace lmkit::config
