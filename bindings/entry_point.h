// A runtime entry point bound to Lua by one line, derived from its C++ declaration:
//
//   entry<&analysis::estimate_hidden_size>("hidden_size", "sv", "A softmax model's hidden size ...")
//
// The parameter types say how each Lua argument is read and checked (Tensor, integer, number,
// boolean, string, a list of numbers, a model, std::optional<T> for an argument that may be nil),
// an options struct with a declared_options(config::Tag<T>) is read from a table of named options
// (unknown keys with the closest name, types, ranges, defaults — all from the declaration), and the
// result type says what is returned (a struct with a declared_result(config::Tag<T>) becomes a
// table or several values, vectors become lists, pairs two values). The doc string that help() and
// docs/lua-api.md show is generated from the same declarations: the signature with the defaults,
// then the summary, the options one per line and the result's fields one per line.
//
// `arguments` names the positional parameters that are not options structs, comma-separated.
#pragma once
#include <lua.hpp>

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bindings/lua_call.h"
#include "bindings/lua_config.h"
#include "bindings/lua_heads.h"
#include "bindings/lua_model.h"
#include "bindings/lua_tensor.h"
#include "runtime/config/bound_options.h"
#include "runtime/config/declared_result.h"
#include "runtime/core/error.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::lua {
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

// A 1-D tensor or a Lua array of numbers.
std::vector<double> read_numbers(lua_State* L, int position);

// The table of named options at `position` (nil or none: {}) as JSON, an error for anything else.
nlohmann::json read_options_table(lua_State* L, int position);

template <typename T>
T read(lua_State* L, int position) {
  if constexpr (IsOptional<T>::value) {
    if (lua_isnoneornil(L, position)) return std::nullopt;
    return read<typename T::value_type>(L, position);
  } else if constexpr (HasOptions<T>::value) {
    const auto given = read_options_table(L, position);
    try {
      return declared_options(config::Tag<T>{}).from_json(given);
    } catch (const ConfigError& e) {
      throw ArgError(position, e.what());
    }
  } else if constexpr (std::is_same_v<T, torch::Tensor>) {
    return check_tensor(L, position);
  } else if constexpr (std::is_same_v<T, LanguageModel>) {
    return check_model(L, position);  // a handle: alive even if a Lua head closes the Model
  } else if constexpr (std::is_same_v<T, bool>) {
    return check_boolean(L, position);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(check_integer(L, position));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(check_number(L, position));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return check_string(L, position);
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return read_numbers(L, position);
  } else if constexpr (std::is_same_v<T, torch::ScalarType>) {
    return parse_dtype(check_string(L, position));
  } else {
    static_assert(sizeof(T) == 0, "entry<>: no Lua reader for this parameter type");
  }
}

template <typename T>
int push(lua_State* L, const T& value);

// Pushes a value that must be one Lua value (a list entry, a field).
template <typename T>
void push_one(lua_State* L, const T& value) {
  if constexpr (HasResult<T>::value) {
    const auto declared = declared_result(config::Tag<T>{});
    if (declared.shape == config::ResultShape::Values) {
      throw std::logic_error("entry<>: a result of several values cannot be nested");
    }
    lua_createtable(L, 0, static_cast<int>(std::tuple_size_v<decltype(declared.fields)>));
    std::apply([&](const auto&... field) { ((push_one(L, value.*(field.member)), lua_setfield(L, -2, field.name)), ...); },
               declared.fields);
  } else if constexpr (IsVector<T>::value) {
    lua_createtable(L, static_cast<int>(value.size()), 0);
    lua_Integer k = 0;
    for (const auto& item : value) {
      push_one(L, item);
      lua_rawseti(L, -2, ++k);
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
  } else if constexpr (std::is_integral_v<T>) {
    lua_pushinteger(L, static_cast<lua_Integer>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    lua_pushnumber(L, static_cast<lua_Number>(value));
  } else if constexpr (std::is_same_v<T, std::string>) {
    push_string(L, value);
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    push_json(L, value);
  } else {
    static_assert(sizeof(T) == 0, "entry<>: no Lua value for this result type");
  }
}

// Pushes a whole result; returns the number of values.
template <typename T>
int push(lua_State* L, const T& value) {
  if constexpr (IsPair<T>::value) {
    push_one(L, value.first);
    push_one(L, value.second);
    return 2;
  } else if constexpr (HasResult<T>::value) {
    const auto declared = declared_result(config::Tag<T>{});
    if (declared.shape == config::ResultShape::Table) {
      push_one(L, value);
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

// What the signature shows for a value of type T: "Tensor", "{hidden_size=, found=}", ...
template <typename T>
std::string shown(const T* = nullptr) {
  if constexpr (IsPair<T>::value) {
    return shown<typename T::first_type>() + ", " + shown<typename T::second_type>();
  } else if constexpr (HasResult<T>::value) {
    const auto declared = declared_result(config::Tag<T>{});
    const bool table = declared.shape == config::ResultShape::Table;
    std::string text;
    std::apply([&](const auto&... field) { ((text += (text.empty() ? "" : ", ") + std::string(field.name) + (table ? "=" : "")), ...); },
               declared.fields);
    return table ? "{" + text + "}" : text;
  } else if constexpr (IsVector<T>::value) {
    return "{" + shown<typename T::value_type>() + ", ...}";
  } else if constexpr (IsOptional<T>::value) {
    return shown<typename T::value_type>() + "|nil";
  } else if constexpr (std::is_same_v<T, torch::Tensor>) {
    return "Tensor";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "boolean";
  } else if constexpr (std::is_integral_v<T>) {
    return "integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "number";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "string";
  } else {
    return "table";
  }
}

// "  name: doc" for each field of a declared result (the element's, for a list of them).
template <typename T>
std::string result_lines() {
  if constexpr (IsVector<T>::value) {
    return result_lines<typename T::value_type>();
  } else if constexpr (HasResult<T>::value) {
    std::string text;
    const auto declared = declared_result(config::Tag<T>{});
    std::apply([&](const auto&... field) { ((text += "  " + std::string(field.name) + ": " + field.doc + "\n"), ...); },
               declared.fields);
    return text;
  } else {
    return "";
  }
}

std::vector<std::string> split_names(const char* arguments);

template <typename R, typename... A>
std::string generate_doc(const std::string& qualified, const char* arguments, const char* summary) {
  const auto names = split_names(arguments);
  std::size_t next_name = 0;
  std::string call, options_text;
  const auto add = [&](bool optional, const std::string& text) {
    if (optional) {
      call += "[" + std::string(call.empty() ? "" : ", ") + text + "]";
    } else {
      call += (call.empty() ? "" : ", ") + text;
    }
  };
  const auto parameter = [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    if constexpr (HasOptions<T>::value) {
      const auto& schema = declared_options(config::Tag<T>{}).schema();
      add(true, schema.signature());
      options_text += schema.describe();
    } else {
      const std::string name = next_name < names.size() ? names[next_name++] : "?";
      if constexpr (IsOptional<T>::value) {
        add(false, name + "|nil");
      } else {
        add(false, name);
      }
    }
  };
  (parameter(static_cast<std::decay_t<A>*>(nullptr)), ...);
  if (next_name != names.size()) throw std::logic_error(qualified + ": the argument names do not match the parameters");
  std::string doc = qualified + "(" + call + ")";
  if constexpr (!std::is_void_v<R>) doc += " -> " + shown<R>();
  doc += "\n" + std::string(summary);
  if (!options_text.empty()) doc += "\nOptions:\n" + options_text;
  if constexpr (!std::is_void_v<R>) {
    const auto fields = result_lines<R>();
    if (!fields.empty()) doc += (options_text.empty() ? "\n" : "") + std::string("Result:\n") + fields;
  }
  while (!doc.empty() && doc.back() == '\n') doc.pop_back();
  return doc;
}

template <typename F>
struct Signature;
template <typename R, typename... A>
struct Signature<R (*)(A...)> {
  using Result = R;
  static std::string doc(const std::string& qualified, const char* arguments, const char* summary) {
    return generate_doc<R, A...>(qualified, arguments, summary);
  }
  template <auto Fn, std::size_t... I>
  static int call(lua_State* L, std::index_sequence<I...>) {
    // Braced initialization reads the arguments left to right, as Lua's messages number them.
    std::tuple<std::decay_t<A>...> args{read<std::decay_t<A>>(L, static_cast<int>(I) + 1)...};
    LuaCallScope scope(L);  // a Lua head called from inside the entry point runs on this thread
    if constexpr (std::is_void_v<R>) {
      std::apply(Fn, args);
      return 0;
    } else {
      const auto result = std::apply(Fn, args);
      return push(L, result);
    }
  }
  static constexpr std::size_t arity = sizeof...(A);
};

template <auto Fn>
int call(lua_State* L) {
  using S = Signature<decltype(Fn)>;
  return S::template call<Fn>(L, std::make_index_sequence<S::arity>{});
}

// Keeps a generated doc for the life of the process (Function holds a const char*).
const char* keep(std::string text);

}  // namespace entry_detail

// The Function for lmkit.<qualifier>.<name>, bound to `Fn` (see the top of this file).
template <auto Fn>
Function entry(const char* qualifier, const char* name, const char* arguments, const char* summary) {
  using S = entry_detail::Signature<decltype(Fn)>;
  const std::string qualified = std::string(qualifier) + "." + name;
  return {name, &entry_detail::call<Fn>, entry_detail::keep(S::doc(qualified, arguments, summary))};
}

}  // namespace lmkit::lua
