// Numbers read from JSON options. nlohmann's get<std::int64_t>() truncates 1.5 to 1 and wraps
// 1e20 to −9223372036854775808 without a word; options read through these instead, which accept
// an integer-valued float (Lua writes 2.0 for some integers) and reject the rest by name.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"

namespace lmkit::config {

// ConfigError "<what> must be an integer, got 1.5" / "... within the 64-bit range, got 1e+20".
std::int64_t json_integer(const nlohmann::json& value, const std::string& what);
// As json_integer, and ≥ 0 (seeds).
std::uint64_t json_unsigned(const nlohmann::json& value, const std::string& what);
// Any JSON number (ConfigError "<what> must be a number, got \"x\"").
double json_number(const nlohmann::json& value, const std::string& what);

}  // namespace lmkit::config
