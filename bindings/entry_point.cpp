#include "bindings/entry_point.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <type_traits>

#include "runtime/core/number_text.h"

namespace lmkit::lua {

namespace entry_detail {

void fail(const Where& where, const std::string& message) {
  throw ArgError(where.position, where.path.empty() ? message : where.path + ": " + message);
}

void expected(lua_State* L, int index, const Where& where, const std::string& what) {
  try {
    type_error(L, index, what.c_str());
  } catch (const ArgError& e) {
    fail(where, e.what());
  }
}

namespace {

// A list of T (double or std::int64_t) from a Lua array or a tensor: any integer tensor for
// integers (read in order), a 1-D one for numbers.
template <typename T>
std::vector<T> read_values(lua_State* L, int index, const Where& where) {
  constexpr bool integers = std::is_integral_v<T>;
  if (auto* t = test_tensor(L, index)) {
    if (!t->defined()) fail(where, "tensor was already closed or collected");
    if (integers && (torch::isFloatingType(t->scalar_type()) || t->scalar_type() == torch::kBool)) {
      fail(where, "an integer tensor expected");
    }
    if (!integers && t->dim() != 1) fail(where, "a tensor of numbers must be 1-D, got " + integer_text(t->dim()) + "-D");
    auto flat = t->detach().to(torch::kCPU).to(integers ? torch::kInt64 : torch::kFloat64).reshape({-1}).contiguous();
    return std::vector<T>(flat.data_ptr<T>(), flat.data_ptr<T>() + flat.numel());
  }
  if (lua_type(L, index) != LUA_TTABLE) {
    expected(L, index, where, integers ? "array of integers or integer Tensor" : "array of numbers or 1-D Tensor");
  }
  std::vector<T> values;
  const auto n = lua_rawlen(L, index);
  for (lua_Unsigned k = 1; k <= n; ++k) {
    lua_rawgeti(L, index, static_cast<lua_Integer>(k));
    int ok = lua_type(L, -1) == LUA_TNUMBER;
    values.push_back(integers ? static_cast<T>(lua_tointegerx(L, -1, &ok)) : static_cast<T>(lua_tonumber(L, -1)));
    lua_pop(L, 1);
    if (!ok) fail(where, "entry " + integer_text(k) + (integers ? " is not an integer" : " is not a number"));
  }
  return values;
}

}  // namespace

std::vector<double> read_numbers(lua_State* L, int index, const Where& where) {
  return read_values<double>(L, index, where);
}

std::vector<std::int64_t> read_integers(lua_State* L, int index, const Where& where) {
  return read_values<std::int64_t>(L, index, where);
}

OptionsTable read_options_table(lua_State* L, int index, const Where& where, const config::OptionSchema& schema,
                                const std::vector<std::string>& skipped) {
  OptionsTable table{nlohmann::json::object(), {}};
  if (lua_isnoneornil(L, index)) return table;
  if (lua_type(L, index) != LUA_TTABLE) expected(L, index, where, "table of options");
  index = lua_absindex(L, index);
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      // A list where named options belong: {} is fine (no options), {1, 2} is not.
      lua_pop(L, 2);
      fail(where, "expected a table of named options ({key = value, ...}), got a list");
    }
    const std::string key = lua_tostring(L, -2);
    if (std::find(skipped.begin(), skipped.end(), key) != skipped.end()) {
      lua_pop(L, 1);
      continue;
    }
    const config::OptionSpec* spec = schema.find(key);
    if (spec && spec->type == config::OptionType::Tensor && !lua_isnil(L, -1)) {
      auto* t = test_tensor(L, -1);
      if (!t || !t->defined()) {
        const std::string got = luaL_typename(L, -1);
        lua_pop(L, 2);
        fail(where, schema.owner() + " option '" + key + "' must be a Tensor (" + spec->doc + "), got " + got);
      }
      table.tensors.emplace_back(key, *t);
    } else {
      try {
        table.values[key] = to_json(L, lua_gettop(L), key);
      } catch (const ConfigError& e) {
        lua_pop(L, 2);
        fail(where, e.what());
      }
    }
    lua_pop(L, 1);
  }
  for (const auto& option : schema.options()) {
    if (option.type != config::OptionType::Tensor || !option.required) continue;
    bool given = false;
    for (const auto& [name, tensor] : table.tensors) given = given || name == option.name;
    if (!given) fail(where, schema.owner() + " option '" + option.name + "' is required (" + option.doc + ")");
  }
  return table;
}

void check_keys(lua_State* L, int index, const Where& where, const std::vector<std::string>& fields,
                const std::vector<std::string>& skipped) {
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    lua_pop(L, 1);
    const bool named = lua_type(L, -1) == LUA_TSTRING;
    const std::string key = named ? lua_tostring(L, -1) : "";
    if (named && (std::find(fields.begin(), fields.end(), key) != fields.end() ||
                  std::find(skipped.begin(), skipped.end(), key) != skipped.end())) {
      continue;
    }
    lua_pop(L, 1);
    auto accepted = fields;
    accepted.insert(accepted.end(), skipped.begin(), skipped.end());
    fail(where, named ? config::unknown_key_text("field", key, accepted) : "fields are named, not numbered");
  }
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

}  // namespace entry_detail
}  // namespace lmkit::lua
