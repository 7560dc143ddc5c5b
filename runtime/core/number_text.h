// Numbers in text (messages, names, logs) go through these two and nothing else: std::to_string
// prints a double with six fixed decimals ("got 0.000000" for ε = 1e-9), so lmkit's sources do not
// use it (the structure.number_text test checks); fmt::format is for laid-out text (widths,
// precision: tables, progress lines).
#pragma once
#include <cmath>
#include <string>
#include <type_traits>

#include <fmt/format.h>

namespace lmkit {

// A floating value as a message shows it: the shortest text that reads back the same, "NaN" for a
// NaN (fmt prints one with its sign bit as "-nan", which reads as a second mystery), "inf"/"-inf".
inline std::string describe_number(double value) {
  if (std::isnan(value)) return "NaN";
  return fmt::format("{}", value);
}

// An integer (a count, an index, a size, an id) in decimal. Only integers compile: a floating value
// takes describe_number. (The one use of std::to_string: exact for integers, a char as its code.)
template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
std::string integer_text(T value) {
  return std::to_string(value);
}

}  // namespace lmkit
