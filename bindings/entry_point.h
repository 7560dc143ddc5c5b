// A runtime entry point bound to Lua by one line, derived from its C++ declaration:
//
//   entry<&analysis::estimate_hidden_size>("lmkit.analysis", "hidden_size", "sv", "A softmax model's ...")
//   method<&data::Vocabulary::encode>("encode", "text", "Words to ids ...")
//
// The parameter types say how each Lua argument is read and checked: Tensor, integer, number,
// boolean, string, a dtype name, a list (std::vector), a {a, b} pair, a table of strings to values
// (std::map), any Lua data (nlohmann::json), a model or another class of lua_class.h, one of two
// kinds (std::variant), std::optional<T> for an argument that may be nil, a number that keeps
// its kind (torch::Scalar: integer, float or boolean), Rest<T> for the values of type T from its
// position on or one list of them (lmkit.zeros(2, 3) or lmkit.zeros({2, 3})). A struct with a
// declared_options(config::Tag<T>) is read from a table of named options (unknown keys with the
// closest name, types, ranges, defaults, nested tables — all from the declaration); a struct with a
// declared_result is read from a table of its fields. A Progress parameter takes no argument: it
// shows the work's progress on a terminal. The result type says what is returned: a struct with a
// declared_result becomes a table or several values, vectors become lists, pairs and tuples
// several values, classes their objects, a reference to the first parameter its Lua value (the
// in-place methods return self). The doc string that help() and docs/lua-api.md show is
// generated from the same declarations: the signature with the defaults, the summary, the options
// one per line and the result's fields one per line.
//
// `arguments` names the positional parameters that are neither options structs nor Progress,
// comma-separated; a method's `self` is not among them.
#pragma once
#include <lua.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "bindings/bound_classes.h"
#include "bindings/lua_call.h"
#include "bindings/lua_class.h"
#include "bindings/lua_config.h"
#include "bindings/lua_heads.h"
#include "bindings/lua_tensor.h"
#include "runtime/config/bound_options.h"
#include "runtime/config/declared_result.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/core/work_progress.h"
#include "runtime/models/language_model.h"
#include "runtime/tensor/tensor_factories.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::lua {

// Progress of long work, (done, total): a parameter of this type is filled in by the binding with
// runtime/core/work_progress's line on a terminal (percentage, rate, ETA), and nothing otherwise.
using Progress = std::function<void(std::int64_t, std::int64_t)>;

namespace entry_detail {

template <typename T, typename = void>
struct HasOptions : std::false_type {};
template <typename T>
struct HasOptions<T, std::void_t<decltype(declared_options(config::Tag<T>{}))>> : std::true_type {};

template <typename T, typename = void>
struct HasResult : std::false_type {};
template <typename T>
struct HasResult<T, std::void_t<decltype(declared_result(config::Tag<T>{}))>> : std::true_type {};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
struct IsPair : std::false_type {};
template <typename A, typename B>
struct IsPair<std::pair<A, B>> : std::true_type {};
template <typename T>
struct IsTuple : std::false_type {};
template <typename... T>
struct IsTuple<std::tuple<T...>> : std::true_type {};
template <typename T>
struct IsMap : std::false_type {};
template <typename V>
struct IsMap<std::map<std::string, V>> : std::true_type {};
template <typename T>
struct IsVariant : std::false_type {};
template <typename... T>
struct IsVariant<std::variant<T...>> : std::true_type {};
template <typename T>
struct IsRest : std::false_type {};
template <typename T>
struct IsRest<Rest<T>> : std::true_type {};
template <typename T>
struct IsSharedClass : std::false_type {};
template <typename T>
struct IsSharedClass<std::shared_ptr<T>> : IsClass<std::remove_const_t<T>> {};

// A registered class given as a shared_ptr to it.
template <typename T>
using SharedClass = std::remove_const_t<typename T::element_type>;

// Where a value comes from, for messages: the argument's position and the path inside it
// ("entry 3", "field 'name'"); empty at the argument itself.
struct Where {
  int position;
  std::string path;
  Where at(const std::string& step) const { return {position, path.empty() ? step : path + ", " + step}; }
};

[[noreturn]] void fail(const Where& where, const std::string& message);
// "number expected, got string" (the value's __name for userdata) at `where`.
[[noreturn]] void expected(lua_State* L, int index, const Where& where, const std::string& what);

// A 1-D tensor or a Lua array of numbers.
std::vector<double> read_numbers(lua_State* L, int index, const Where& where);
// An integer tensor of any shape (read in order) or a Lua array of integers.
std::vector<std::int64_t> read_integers(lua_State* L, int index, const Where& where);

// The table of named options at `index` (nil or none: {}) checked by `schema`: its values as JSON,
// and the Tensor-typed options set apart (a JSON value cannot hold them).
struct OptionsTable {
  nlohmann::json values;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
};
// Keys in `skipped` are left for the caller to read.
OptionsTable read_options_table(lua_State* L, int index, const Where& where, const config::OptionSchema& schema,
                                const std::vector<std::string>& skipped = {});

template <typename T>
T read(lua_State* L, int index, const Where& where);
template <typename T>
bool is_a(lua_State* L, int index);
template <typename T>
std::string shown(const T* = nullptr);

template <typename T>
T read_options(lua_State* L, int index, const Where& where) {
  const auto& declared = declared_options(config::Tag<T>{});
  auto table = read_options_table(L, index, where, declared.schema());
  T value;
  try {
    value = declared.from_json(table.values);
  } catch (const ConfigError& e) {
    fail(where, e.what());
  }
  for (const auto& [name, tensor] : table.tensors) {
    for (const auto& option : declared.options()) {
      if (option.spec.name == name) option.set_tensor(value, tensor);
    }
  }
  return value;
}

// Fails at a key that names none of `fields` (and is not one of `skipped`).
void check_keys(lua_State* L, int index, const Where& where, const std::vector<std::string>& fields,
                const std::vector<std::string>& skipped);

// A declared result's fields from a table: those present are read, the rest keep their defaults;
// any other key (but `skipped`) is an error naming the closest field. A lone value stands for the
// first field of a result_table_or_first ({text = s}).
template <typename T>
T read_declared(lua_State* L, int index, const Where& where, const std::vector<std::string>& skipped = {}) {
  T value{};
  const auto declared = declared_result(config::Tag<T>{});
  using First = std::decay_t<decltype(value.*(std::get<0>(declared.fields).member))>;
  const bool lone = declared.shape == config::ResultShape::TableOrFirst;
  if (lone && lua_type(L, index) != LUA_TTABLE && is_a<First>(L, index)) {
    value.*(std::get<0>(declared.fields).member) = read<First>(L, index, where);
    return value;
  }
  if (lua_type(L, index) != LUA_TTABLE) expected(L, index, where, lone ? shown<First>() + " or table" : "table");
  index = lua_absindex(L, index);
  std::vector<std::string> names;
  std::apply([&](const auto&... field) { (names.emplace_back(field.name), ...); }, declared.fields);
  check_keys(L, index, where, names, skipped);
  std::apply(
      [&](const auto&... field) {
        const auto one = [&](const auto& f) {
          using Field = std::decay_t<decltype(value.*(f.member))>;
          if (get_field_raw(L, index, f.name) != LUA_TNIL || IsOptional<Field>::value) {
            value.*(f.member) = read<Field>(L, -1, where.at(std::string("field '") + f.name + "'"));
          }
          lua_pop(L, 1);
        };
        (one(field), ...);
      },
      declared.fields);
  return value;
}

template <typename T>
bool is_a(lua_State* L, int index) {
  if constexpr (std::is_same_v<T, torch::Tensor>) {
    return test_tensor(L, index) != nullptr;
  } else if constexpr (std::is_same_v<T, LanguageModel>) {
    return is_object<LanguageModelImpl>(L, index);
  } else if constexpr (IsSharedClass<T>::value) {
    return is_object<SharedClass<T>>(L, index);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return lua_type(L, index) == LUA_TSTRING;
  } else if constexpr (std::is_same_v<T, torch::Scalar>) {
    return lua_type(L, index) == LUA_TNUMBER || lua_type(L, index) == LUA_TBOOLEAN;
  } else if constexpr (std::is_arithmetic_v<T>) {
    return lua_type(L, index) == LUA_TNUMBER;
  } else {
    return lua_type(L, index) == LUA_TTABLE;
  }
}

template <typename... A>
std::variant<A...> read_variant(lua_State* L, int index, const Where& where, std::variant<A...>*) {
  std::optional<std::variant<A...>> value;
  const auto one = [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    if (!value && is_a<T>(L, index)) value = read<T>(L, index, where);
  };
  (one(static_cast<A*>(nullptr)), ...);
  if (!value) {
    std::string names;
    ((names += (names.empty() ? "" : " or ") + shown<A>()), ...);
    expected(L, index, where, names);
  }
  return *value;
}

template <typename T>
T read(lua_State* L, int index, const Where& where) {
  if constexpr (IsOptional<T>::value) {
    if (lua_isnoneornil(L, index)) return std::nullopt;
    return read<typename T::value_type>(L, index, where);
  } else if constexpr (HasOptions<T>::value) {
    return read_options<T>(L, index, where);
  } else if constexpr (std::is_same_v<T, torch::Tensor>) {
    auto* t = test_tensor(L, index);
    if (!t) expected(L, index, where, "Tensor");
    if (!t->defined()) fail(where, "tensor was already closed or collected");
    return *t;
  } else if constexpr (std::is_same_v<T, LanguageModel>) {
    // A handle: the model stays alive even if a head written in Lua closes the Model meanwhile.
    if (!is_a<T>(L, index)) expected(L, index, where, "Model");
    try {
      return LanguageModel(check_object<LanguageModelImpl>(L, index));
    } catch (const ArgError& e) {
      fail(where, e.what());
    }
  } else if constexpr (IsSharedClass<T>::value) {
    if (!is_a<T>(L, index)) expected(L, index, where, ClassTraits<SharedClass<T>>::name);
    try {
      return check_object<SharedClass<T>>(L, index);
    } catch (const ArgError& e) {
      fail(where, e.what());
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    if (lua_type(L, index) != LUA_TBOOLEAN) expected(L, index, where, "boolean");
    return lua_toboolean(L, index);
  } else if constexpr (std::is_same_v<T, torch::Scalar>) {
    if (lua_type(L, index) == LUA_TBOOLEAN) return torch::Scalar(static_cast<bool>(lua_toboolean(L, index)));
    if (lua_type(L, index) != LUA_TNUMBER) expected(L, index, where, "number or boolean");
    if (lua_isinteger(L, index)) return torch::Scalar(static_cast<std::int64_t>(lua_tointeger(L, index)));
    return torch::Scalar(static_cast<double>(lua_tonumber(L, index)));
  } else if constexpr (std::is_integral_v<T>) {
    int is_integer = 0;
    const lua_Integer value = lua_tointegerx(L, index, &is_integer);
    if (!is_integer) {
      if (lua_type(L, index) == LUA_TNUMBER) fail(where, "number has no integer representation");
      expected(L, index, where, "integer");
    }
    if (std::is_unsigned_v<T> && value < 0) fail(where, "must be non-negative, got " + integer_text(value));
    if constexpr (sizeof(T) < sizeof(lua_Integer)) {
      if (value < std::numeric_limits<T>::min() || value > std::numeric_limits<T>::max()) {
        fail(where, "must be in " + integer_text(std::numeric_limits<T>::min()) + ".." +
                        integer_text(std::numeric_limits<T>::max()) + ", got " + integer_text(value));
      }
    }
    return static_cast<T>(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (lua_type(L, index) != LUA_TNUMBER) expected(L, index, where, "number");
    return static_cast<T>(lua_tonumber(L, index));
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (lua_type(L, index) != LUA_TSTRING) expected(L, index, where, "string");
    std::size_t length = 0;
    const char* text = lua_tolstring(L, index, &length);
    return std::string(text, length);
  } else if constexpr (std::is_same_v<T, std::filesystem::path>) {
    return std::filesystem::path(read<std::string>(L, index, where));
  } else if constexpr (std::is_same_v<T, torch::ScalarType>) {
    const auto name = read<std::string>(L, index, where);
    try {
      return parse_dtype(name);
    } catch (const UsageError& e) {
      fail(where, e.what());
    }
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    try {
      return to_json(L, index, "value");
    } catch (const ConfigError& e) {
      fail(where, e.what());
    }
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return read_numbers(L, index, where);
  } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
    return read_integers(L, index, where);
  } else if constexpr (IsVector<T>::value) {
    if (lua_type(L, index) != LUA_TTABLE) expected(L, index, where, "list");
    index = lua_absindex(L, index);
    T values;
    const auto n = lua_rawlen(L, index);
    for (lua_Unsigned k = 1; k <= n; ++k) {
      enter_nested_level(L, 0, "a list");
      lua_rawgeti(L, index, static_cast<lua_Integer>(k));
      values.push_back(read<typename T::value_type>(L, -1, where.at("entry " + integer_text(k))));
      lua_pop(L, 1);
    }
    return values;
  } else if constexpr (IsPair<T>::value) {
    if (lua_type(L, index) != LUA_TTABLE) expected(L, index, where, "{" + shown<T>() + "} pair");
    index = lua_absindex(L, index);
    lua_rawgeti(L, index, 1);
    lua_rawgeti(L, index, 2);
    T value{read<typename T::first_type>(L, -2, where.at("[1]")), read<typename T::second_type>(L, -1, where.at("[2]"))};
    lua_pop(L, 2);
    return value;
  } else if constexpr (IsMap<T>::value) {
    if (lua_type(L, index) != LUA_TTABLE) expected(L, index, where, "table");
    index = lua_absindex(L, index);
    T values;
    lua_pushnil(L);
    while (lua_next(L, index) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) {
        lua_pop(L, 2);
        fail(where, "keys must be strings");
      }
      std::size_t length = 0;
      const char* text = lua_tolstring(L, -2, &length);
      const std::string key(text, length);  // every byte: a key with a NUL is the runtime's to refuse
      values.emplace(key, read<typename T::mapped_type>(L, -1, where.at("'" + key + "'")));
      lua_pop(L, 1);
    }
    return values;
  } else if constexpr (IsVariant<T>::value) {
    return read_variant(L, index, where, static_cast<T*>(nullptr));
  } else if constexpr (HasResult<T>::value) {
    return read_declared<T>(L, index, where);
  } else {
    static_assert(sizeof(T) == 0, "entry<>: no Lua reader for this parameter type");
  }
}

// ---- results ----

template <typename T>
void push_one(lua_State* L, const T& value);

template <typename T>
void push_fields(lua_State* L, const T& value) {
  const auto declared = declared_result(config::Tag<T>{});
  lua_createtable(L, 0, static_cast<int>(std::tuple_size_v<decltype(declared.fields)>));
  std::apply([&](const auto&... field) { ((push_one(L, value.*(field.member)), lua_setfield(L, -2, field.name)), ...); },
             declared.fields);
}

// Pushes a value that must be one Lua value (a list entry, a field).
template <typename T>
void push_one(lua_State* L, const T& value) {
  if (!lua_checkstack(L, 4)) throw std::bad_alloc();
  if constexpr (IsSharedClass<T>::value) {
    if (value) {
      push_object<SharedClass<T>>(L, value);
    } else {
      lua_pushnil(L);
    }
  } else if constexpr (std::is_same_v<T, LanguageModel>) {
    if (value) {
      push_object<LanguageModelImpl>(L, value.ptr());
    } else {
      lua_pushnil(L);
    }
  } else if constexpr (IsClass<T>::value) {
    push_object<T>(L, std::make_shared<ClassObject<T>>(value));
  } else if constexpr (HasResult<T>::value) {
    push_fields(L, value);
  } else if constexpr (IsVector<T>::value) {
    lua_createtable(L, static_cast<int>(value.size()), 0);
    lua_Integer k = 0;
    for (const auto& item : value) {
      push_one(L, item);
      lua_rawseti(L, -2, ++k);
    }
  } else if constexpr (IsPair<T>::value) {
    lua_createtable(L, 2, 0);
    push_one(L, value.first);
    lua_rawseti(L, -2, 1);
    push_one(L, value.second);
    lua_rawseti(L, -2, 2);
  } else if constexpr (IsMap<T>::value) {
    lua_createtable(L, 0, static_cast<int>(value.size()));
    for (const auto& [key, item] : value) {
      push_one(L, item);
      lua_setfield(L, -2, key.c_str());
    }
  } else if constexpr (IsOptional<T>::value) {
    if (value) {
      push_one(L, *value);
    } else {
      lua_pushnil(L);
    }
  } else if constexpr (std::is_same_v<T, torch::Tensor>) {
    if (value.defined()) {
      push_tensor(L, value);
    } else {
      lua_pushnil(L);
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    lua_pushboolean(L, value);
  } else if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(lua_Integer)) {
    // Lua integers are signed: larger values become the nearest float, not a negative integer.
    if (value <= static_cast<T>(LUA_MAXINTEGER)) {
      lua_pushinteger(L, static_cast<lua_Integer>(value));
    } else {
      lua_pushnumber(L, static_cast<lua_Number>(value));
    }
  } else if constexpr (std::is_integral_v<T>) {
    lua_pushinteger(L, static_cast<lua_Integer>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    lua_pushnumber(L, static_cast<lua_Number>(value));
  } else if constexpr (std::is_same_v<T, std::string>) {
    push_string(L, value);
  } else if constexpr (std::is_same_v<T, const char*>) {
    lua_pushstring(L, value);
  } else if constexpr (std::is_same_v<T, std::filesystem::path>) {
    push_string(L, value.string());
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    push_json(L, value);
  } else {
    static_assert(sizeof(T) == 0, "entry<>: no Lua value for this result type");
  }
}

// Pushes a whole result; returns the number of values.
template <typename T>
int push(lua_State* L, const T& value) {
  if constexpr (IsVariant<T>::value) {
    return std::visit([L](const auto& held) { return push(L, held); }, value);
  } else if constexpr (IsOptional<T>::value) {
    if (!value) {
      lua_pushnil(L);
      return 1;
    }
    return push(L, *value);
  } else if constexpr (IsPair<T>::value) {
    push_one(L, value.first);
    push_one(L, value.second);
    return 2;
  } else if constexpr (IsTuple<T>::value) {
    std::apply([&](const auto&... item) { (push_one(L, item), ...); }, value);
    return static_cast<int>(std::tuple_size_v<T>);
  } else if constexpr (HasResult<T>::value && !IsClass<T>::value) {
    const auto declared = declared_result(config::Tag<T>{});
    if (declared.shape != config::ResultShape::Values) {
      push_fields(L, value);
      return 1;
    }
    std::apply([&](const auto&... field) { (push_one(L, value.*(field.member)), ...); }, declared.fields);
    return static_cast<int>(std::tuple_size_v<decltype(declared.fields)>);
  } else {
    push_one(L, value);
    return 1;
  }
}

// ---- the generated doc ----

template <typename... T>
std::string shown_alternatives(std::variant<T...>*) {
  std::string text;
  ((text += (text.empty() ? "" : " | ") + shown<T>()), ...);
  return text;
}

template <typename... T>
std::string shown_list(std::tuple<T...>*) {
  std::string text;
  ((text += (text.empty() ? "" : ", ") + shown<T>()), ...);
  return text;
}

// What the signature shows for a value of type T: "Tensor", "{hidden_size=, found=}", ...
template <typename T>
std::string shown(const T*) {
  if constexpr (IsPair<T>::value) {
    return shown<typename T::first_type>() + ", " + shown<typename T::second_type>();
  } else if constexpr (IsTuple<T>::value) {
    return shown_list(static_cast<T*>(nullptr));
  } else if constexpr (IsVariant<T>::value) {
    return shown_alternatives(static_cast<T*>(nullptr));
  } else if constexpr (IsSharedClass<T>::value) {
    return ClassTraits<SharedClass<T>>::name;
  } else if constexpr (std::is_same_v<T, LanguageModel>) {
    return "Model";
  } else if constexpr (IsClass<T>::value) {
    return ClassTraits<T>::name;
  } else if constexpr (HasResult<T>::value) {
    const auto declared = declared_result(config::Tag<T>{});
    const bool table = declared.shape != config::ResultShape::Values;
    std::string text;
    std::apply([&](const auto&... field) { ((text += (text.empty() ? "" : ", ") + std::string(field.name) + (table ? "=" : "")), ...); },
               declared.fields);
    return table ? "{" + text + "}" : text;
  } else if constexpr (IsVector<T>::value) {
    using Item = typename T::value_type;
    return "{" + (IsPair<Item>::value ? "{" + shown<Item>() + "}" : shown<Item>()) + ", ...}";
  } else if constexpr (IsOptional<T>::value) {
    const auto inner = shown<typename T::value_type>();
    return inner.find(", ") != std::string::npos && inner.front() != '{' ? "(" + inner + ")|nil" : inner + "|nil";
  } else if constexpr (std::is_same_v<T, torch::Tensor>) {
    return "Tensor";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "boolean";
  } else if constexpr (std::is_same_v<T, torch::Scalar>) {
    return "number";
  } else if constexpr (std::is_integral_v<T>) {
    return "integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "number";
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::filesystem::path>) {
    return "string";
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    return "value";
  } else {
    return "table";
  }
}

// "  name: doc" for each field of a declared result (the element's, for a list of them).
template <typename T>
std::string result_lines() {
  if constexpr (IsVector<T>::value) {
    return result_lines<typename T::value_type>();
  } else if constexpr (HasResult<T>::value && !IsClass<T>::value) {
    std::string text;
    const auto declared = declared_result(config::Tag<T>{});
    std::apply([&](const auto&... field) { ((text += "  " + std::string(field.name) + ": " + field.doc + "\n"), ...); },
               declared.fields);
    return text;
  } else {
    return "";
  }
}

template <typename T>
constexpr bool kTakesNoArgument = std::is_same_v<std::decay_t<T>, Progress>;

std::vector<std::string> split_names(const char* arguments);
// Keeps a generated text for the life of the process (Function holds a const char*).
const char* keep(std::string text);

// `call` is "qualified(" or "self:name(": the doc's first line starts with it.
template <typename R, typename... A>
std::string generate_doc(const std::string& call_prefix, const char* arguments, const char* summary) {
  const auto names = split_names(arguments);
  std::size_t next_name = 0;
  std::string options_text;
  std::vector<std::pair<bool, std::string>> shown_parameters;  // (may be left out, text)
  const auto add = [&](bool optional, const std::string& text) { shown_parameters.emplace_back(optional, text); };
  [[maybe_unused]] const auto parameter = [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    if constexpr (kTakesNoArgument<T>) {
      return;
    } else if constexpr (HasOptions<T>::value) {
      const auto& schema = declared_options(config::Tag<T>{}).schema();
      bool required = false;
      for (const auto& option : schema.options()) required = required || option.required;
      add(!required, schema.signature());
      options_text += schema.describe();
    } else {
      const std::string name = next_name < names.size() ? names[next_name++] : "?";
      add(IsOptional<T>::value, IsRest<T>::value ? name + "..." : name);
    }
  };
  (parameter(static_cast<std::decay_t<A>*>(nullptr)), ...);
  // Trailing parameters that may be left out nest in brackets, as Lua's manual writes them
  // (f(a[, b[, c]])); one that may be nil before a required one reads "b|nil".
  std::size_t trailing = shown_parameters.size();
  while (trailing > 0 && shown_parameters[trailing - 1].first) --trailing;
  std::string call;
  for (std::size_t i = 0; i < shown_parameters.size(); ++i) {
    const auto& [optional, text] = shown_parameters[i];
    if (i < trailing) {
      call += (call.empty() ? "" : ", ") + text + (optional ? "|nil" : "");
    } else {
      call += "[" + std::string(call.empty() ? "" : ", ") + text;
    }
  }
  call += std::string(shown_parameters.size() - trailing, ']');
  if (next_name != names.size()) throw std::logic_error(call_prefix + ": the argument names do not match the parameters");
  std::string doc = call_prefix + call + ")";
  if constexpr (!std::is_void_v<R>) doc += " -> " + shown<std::decay_t<R>>();
  doc += "\n" + std::string(summary);
  if (!options_text.empty()) doc += "\nOptions:\n" + options_text;
  if constexpr (!std::is_void_v<R>) {
    const auto fields = result_lines<std::decay_t<R>>();
    if (!fields.empty()) doc += (options_text.empty() ? "\n" : "") + std::string("Result:\n") + fields;
  }
  while (!doc.empty() && doc.back() == '\n') doc.pop_back();
  return doc;
}

// What a parameter of type P is held as during the call: a class's shared_ptr (the object stays
// alive), a value otherwise.
template <typename P, typename = void>
struct Held {
  using type = std::decay_t<P>;
  static decltype(auto) pass(type& held) { return held; }
};
template <typename P>
struct Held<P, std::enable_if_t<IsClass<std::decay_t<P>>::value>> {
  using type = std::shared_ptr<ClassObject<std::decay_t<P>>>;
  static decltype(auto) pass(type& held) { return *held; }
};
template <typename P>
struct Held<P, std::enable_if_t<std::is_same_v<std::decay_t<P>, std::string_view>>> {
  using type = std::string;  // the view's storage for the call
  static std::string_view pass(type& held) { return held; }
};

// Rest<T>: the values of type T from `next` on, or one list of them there (not a table of named
// options, which may follow).
template <typename T>
Rest<T> read_rest(lua_State* L, int& next) {
  Rest<T> rest;
  if (lua_type(L, next) == LUA_TTABLE && !is_options_table(L, next)) {
    rest.values = read<std::vector<T>>(L, next, Where{next, ""});
    ++next;
    return rest;
  }
  for (; is_a<T>(L, next); ++next) rest.values.push_back(read<T>(L, next, Where{next, ""}));
  return rest;
}

// Reads the parameter at Lua position `next` and moves `next` past what it took: none for a
// Progress, one value for most, as many as there are for a Rest.
template <typename P>
typename Held<P>::type read_parameter(lua_State* L, int& next) {
  using T = std::decay_t<P>;
  if constexpr (kTakesNoArgument<T>) {
    return work_progress(current_function_name(L), "items");
  } else if constexpr (IsRest<T>::value) {
    return read_rest<typename decltype(T::values)::value_type>(L, next);
  } else if constexpr (IsClass<T>::value) {
    const int position = next++;
    if (!is_object<T>(L, position)) type_error(L, position, ClassTraits<T>::name);
    return check_object<T>(L, position);
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    const int position = next++;
    return read<std::string>(L, position, Where{position, ""});
  } else {
    const int position = next++;
    return read<T>(L, position, Where{position, ""});
  }
}

template <typename F>
struct Signature;

template <typename... A>
struct FirstOf {
  using type = void;
};
template <typename F, typename... Others>
struct FirstOf<F, Others...> {
  using type = std::decay_t<F>;
};

template <typename R, typename... A>
struct Signature<R (*)(A...)> {
  using Result = R;
  using First = typename FirstOf<A...>::type;
  template <auto Fn>
  static int call(lua_State* L) {
    return invoke<Fn>(L, std::index_sequence_for<A...>{});
  }
  template <auto Fn, std::size_t... I>
  static int invoke(lua_State* L, std::index_sequence<I...>) {
    // Braced initialization reads the arguments left to right, as Lua's messages number them.
    [[maybe_unused]] int next = 1;
    std::tuple<typename Held<A>::type...> args{read_parameter<A>(L, next)...};
    // A Rest ends at the first value of another type: one left over (t:view(6, m) with m nil) is an
    // error here, not an argument silently dropped.
    if constexpr ((IsRest<std::decay_t<A>>::value || ...)) {
      if (!lua_isnone(L, next)) fail(Where{next, ""}, std::string("unexpected ") + luaL_typename(L, next) + " after the last argument");
    }
    LuaCallScope scope(L);  // a Lua head called from inside the entry point runs on this thread
    if constexpr (std::is_void_v<R>) {
      Fn(Held<A>::pass(std::get<I>(args))...);
      return 0;
    } else if constexpr (std::is_lvalue_reference_v<R> && IsClass<std::decay_t<R>>::value) {
      static_assert(std::is_same_v<std::decay_t<R>, First>, "entry<>: a class reference is returned only as self");
      Fn(Held<A>::pass(std::get<I>(args))...);  // returns its object: the same Lua value, for chaining
      lua_pushvalue(L, 1);
      return 1;
    } else if constexpr (std::is_same_v<R, torch::Tensor&> && std::is_same_v<First, torch::Tensor>) {
      // An in-place method returns its tensor: the same Lua value, for chaining (another tensor is pushed).
      auto& result = Fn(Held<A>::pass(std::get<I>(args))...);
      if (&result == &std::get<0>(args)) return lua_pushvalue(L, 1), 1;
      return push(L, result);
    } else {
      return push(L, Fn(Held<A>::pass(std::get<I>(args))...));
    }
  }
  static std::string doc(const std::string& prefix, const char* arguments, const char* summary, bool method) {
    if constexpr (sizeof...(A) > 0) {
      if (method) return method_doc(prefix, arguments, summary, static_cast<std::tuple<std::decay_t<A>...>*>(nullptr));
    }
    return generate_doc<R, A...>(prefix, arguments, summary);
  }
  template <typename Self, typename... Others>
  static std::string method_doc(const std::string& prefix, const char* arguments, const char* summary,
                                std::tuple<Self, Others...>*) {
    return generate_doc<R, Others...>(prefix, arguments, summary);
  }
};

// A member function: the object is the first argument (self).
template <typename R, typename C, typename... A>
struct Signature<R (C::*)(A...)> : Signature<R (*)(C&, A...)> {
  template <auto Fn>
  static R thunk(C& self, A... args) {
    return (self.*Fn)(std::forward<A>(args)...);
  }
  template <auto Fn>
  static int call(lua_State* L) {
    return Signature<R (*)(C&, A...)>::template call<&thunk<Fn>>(L);
  }
};
template <typename R, typename C, typename... A>
struct Signature<R (C::*)(A...) const> : Signature<R (*)(const C&, A...)> {
  template <auto Fn>
  static R thunk(const C& self, A... args) {
    return (self.*Fn)(std::forward<A>(args)...);
  }
  template <auto Fn>
  static int call(lua_State* L) {
    return Signature<R (*)(const C&, A...)>::template call<&thunk<Fn>>(L);
  }
};

template <auto Fn>
int call(lua_State* L) {
  return Signature<decltype(Fn)>::template call<Fn>(L);
}

// The class a method's self parameter names.
template <typename T>
struct ClassOf {
  using type = std::remove_const_t<T>;
};
template <typename T>
struct ClassOf<std::shared_ptr<T>> {
  using type = std::remove_const_t<T>;
};
template <>
struct ClassOf<LanguageModel> {
  using type = LanguageModelImpl;
};

}  // namespace entry_detail

// Pushes the field `key` of a value with a declared_result; false when it has none of that name.
template <typename T>
bool push_field_of(lua_State* L, const T& value, const std::string& key) {
  bool found = false;
  std::apply([&](const auto&... field) { ((!found && key == field.name ? (entry_detail::push_one(L, value.*(field.member)), found = true) : false), ...); },
             declared_result(config::Tag<T>{}).fields);
  return found;
}

template <typename T>
bool push_declared_field(lua_State* L, const std::string& key) {
  if constexpr (entry_detail::HasResult<std::remove_const_t<ClassObject<T>>>::value) {
    return push_field_of(L, *check_object<T>(L, 1), key);
  } else {
    return false;
  }
}

// The Function for <qualifier>.<name>, bound to `Fn` (see the top of this file).
template <auto Fn>
Function entry(const char* qualifier, const char* name, const char* arguments, const char* summary) {
  using S = entry_detail::Signature<decltype(Fn)>;
  const std::string prefix = std::string(qualifier) + "." + name + "(";
  return {name, &entry_detail::call<Fn>, entry_detail::keep(S::doc(prefix, arguments, summary, false))};
}

// The Function for the method <name> of the class of Fn's first parameter (or Fn's class, for a
// member function): its doc reads "self:name(...)".
template <auto Fn>
Function method(const char* name, const char* arguments, const char* summary) {
  using S = entry_detail::Signature<decltype(Fn)>;
  using Self = typename entry_detail::ClassOf<typename S::First>::type;
  const std::string self = [] {
    if constexpr (std::is_same_v<Self, torch::Tensor>) {
      return "t";  // the Tensor userdata holds its tensor itself (lua_tensor.h), not a class box
    } else {
      return ClassTraits<Self>::self;
    }
  }();
  const std::string prefix = self + ":" + name + "(";
  return {name, &entry_detail::call<Fn>, entry_detail::keep(S::doc(prefix, arguments, summary, true))};
}

}  // namespace lmkit::lua
