// The message of what a call throws, for tests that check an error's words.
#pragma once
#include <exception>
#include <functional>
#include <string>

namespace lmkit::testing {

// What `act` throws, or "(no error)" when it returns.
inline std::string failure(const std::function<void()>& act) {
  try {
    act();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace lmkit::testing
