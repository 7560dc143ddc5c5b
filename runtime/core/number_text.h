// A number as a message shows it: the shortest text that reads back the same, "NaN" for a NaN
// (fmt prints one with its sign bit as "-nan", which reads as a second mystery), "inf"/"-inf".
#pragma once
#include <cmath>
#include <string>

#include <fmt/format.h>

namespace lmkit {

inline std::string describe_number(double value) {
  if (std::isnan(value)) return "NaN";
  return fmt::format("{}", value);
}

}  // namespace lmkit
