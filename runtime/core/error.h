// lmkit's exception types. Each message names the offending file/key/value and, where there is
// one, the way out; the Lua boundary turns them into Lua errors verbatim.
#pragma once
#include <stdexcept>
#include <string>

namespace lmkit {

// A caller passed something unusable (bad shape, out-of-range index, unknown name).
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A configuration key or value that does not fit (unknown key, wrong type).
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Something outside the program is wrong or missing (a file, a device).
class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lmkit
