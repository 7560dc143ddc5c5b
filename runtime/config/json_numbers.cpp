#include "runtime/config/json_numbers.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::config {

std::int64_t json_integer(const nlohmann::json& value, const std::string& what) {
  if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<std::int64_t>();
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw ConfigError(what + " must be an integer within the 64-bit range, got " + value.dump());
    }
    return static_cast<std::int64_t>(u);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) throw ConfigError(what + " must be an integer, got " + describe_number(d));
    // 2^63 is the first double beyond the range; every integral double below it converts exactly.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
      throw ConfigError(what + " must be an integer within the 64-bit range, got " + describe_number(d));
    }
    return static_cast<std::int64_t>(d);
  }
  throw ConfigError(what + " must be an integer, got " + value.dump());
}

std::uint64_t json_unsigned(const nlohmann::json& value, const std::string& what) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  const auto i = json_integer(value, what);
  if (i < 0) throw ConfigError(what + " must be ≥ 0, got " + integer_text(i));
  return static_cast<std::uint64_t>(i);
}

double json_number(const nlohmann::json& value, const std::string& what) {
  if (!value.is_number()) throw ConfigError(what + " must be a number, got " + value.dump());
  return value.get<double>();
}

}  // namespace lmkit::config
