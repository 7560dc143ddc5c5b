#include "bindings/entry_point.h"

#include <deque>
#include <mutex>

#include "runtime/core/number_text.h"

namespace lmkit::lua::entry_detail {

std::vector<double> read_numbers(lua_State* L, int position) {
  if (auto* t = test_tensor(L, position)) {
    if (t->dim() != 1) throw ArgError(position, "a tensor of numbers must be 1-D, got " + integer_text(t->dim()) + "-D");
    auto values = t->detach().to(torch::kCPU).to(torch::kFloat64).contiguous();
    return std::vector<double>(values.data_ptr<double>(), values.data_ptr<double>() + values.numel());
  }
  return check_number_list(L, position, "array of numbers or 1-D Tensor");
}

nlohmann::json read_options_table(lua_State* L, int position) {
  if (lua_isnoneornil(L, position)) return nlohmann::json::object();
  if (!lua_istable(L, position)) type_error(L, position, "table of options");
  nlohmann::json given;
  try {
    given = to_json(L, position, "");
  } catch (const ConfigError& e) {
    throw ArgError(position, e.what());
  }
  if (given.is_array()) {
    if (given.empty()) return nlohmann::json::object();  // {} reads as an empty list
    throw ArgError(position, "expected a table of named options ({key = value, ...}), got a list");
  }
  return given;
}

std::vector<std::string> split_names(const char* arguments) {
  std::vector<std::string> names;
  std::string current;
  for (const char* c = arguments; *c; ++c) {
    if (*c == ',') {
      names.push_back(current);
      current.clear();
    } else if (*c != ' ') {
      current += *c;
    }
  }
  if (!current.empty()) names.push_back(current);
  return names;
}

const char* keep(std::string text) {
  static std::mutex mutex;
  static std::deque<std::string> texts;  // a deque never moves its elements
  std::lock_guard<std::mutex> lock(mutex);
  texts.push_back(std::move(text));
  return texts.back().c_str();
}

}  // namespace lmkit::lua::entry_detail
