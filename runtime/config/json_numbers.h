// Numbers read from JSON options. nlohmann's get<std::int64_t>() truncates 1.5 to 1 and wraps
// 1e20 to −9223372036854775808 without a word; options read through these instead, which accept
// an integer-valued float (Lua writes 2.0 for some integers) and reject the rest by name.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>
#include <type_traits>

#include "runtime/core/error.h"

namespace lmkit::config {

// ConfigError "<what> must be an integer, got 1.5" / "... within the 64-bit range, got 1e+20".
std::int64_t json_integer(const nlohmann::json& value, const std::string& what);
// As json_integer, and ≥ 0 (seeds).
std::uint64_t json_unsigned(const nlohmann::json& value, const std::string& what);
// Any JSON number (ConfigError "<what> must be a number, got \"x\"").
double json_number(const nlohmann::json& value, const std::string& what);

// The value of an option as T: integers and numbers through the checked readers above, anything
// else (strings, booleans, JSON) through nlohmann with a ConfigError naming `what` on a mismatch.
template <typename T>
T json_option(const nlohmann::json& value, const std::string& what) {
  if constexpr (std::is_same_v<T, std::int64_t>) {
    return json_integer(value, what);
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return json_unsigned(value, what);
  } else if constexpr (std::is_same_v<T, double>) {
    return json_number(value, what);
  } else {
    try {
      return value.get<T>();
    } catch (const nlohmann::json::exception&) {
      throw ConfigError(what + " has the wrong type: " + value.dump());
    }
  }
}

}  // namespace lmkit::config
