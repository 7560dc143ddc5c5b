// A runtime class seen from Lua: its objects live in full userdata boxes holding a std::shared_ptr,
// created empty before anything can fail and emptied by __gc/__close (finalizing twice is
// harmless; a closed object is an argument error, never a dangling pointer). Declared once:
//
//   LMKIT_LUA_CLASS(data::Vocabulary, const data::Vocabulary, "Vocab", "vocab")
//
// (the type, the object the box holds, the Lua class name, the name methods' docs give `self`).
// Entry points then take the class as a parameter (const Vocabulary&, std::shared_ptr<...>) and
// return it (a std::shared_ptr, or a value moved into one); register_class<T> sets up the
// metatable: methods, the fields of the object's declared_result, __len and __tostring when the
// traits name them.
#pragma once
#include <lua.hpp>

#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bindings/lua_call.h"

namespace lmkit::lua {

template <typename T>
struct ClassTraits;  // specialized by LMKIT_LUA_CLASS

template <typename T, typename = void>
struct IsClass : std::false_type {};
template <typename T>
struct IsClass<T, std::void_t<decltype(ClassTraits<T>::name)>> : std::true_type {};

template <typename T>
using ClassObject = typename ClassTraits<T>::Object;

template <typename T>
struct Box {
  std::shared_ptr<ClassObject<T>> value;
};

// The metatable's registry key: "lmkit.<Name>".
template <typename T>
std::string class_metatable() {
  return std::string("lmkit.") + ClassTraits<T>::name;
}

template <typename T>
Box<T>* test_box(lua_State* L, int index) {
  return static_cast<Box<T>*>(luaL_testudata(L, index, class_metatable<T>().c_str()));
}

template <typename T>
bool is_object(lua_State* L, int index) {
  return test_box<T>(L, index) != nullptr;
}

// The object at `index`, shared: held for the whole call, since Lua code that runs meanwhile (a
// finalizer at any allocation, a callback, a head written in Lua) may close the userdata.
template <typename T>
std::shared_ptr<ClassObject<T>> check_object(lua_State* L, int index) {
  auto* box = test_box<T>(L, index);
  if (!box) type_error(L, index, ClassTraits<T>::name);
  if (!box->value) throw ArgError(index, std::string(ClassTraits<T>::name) + " was " + ClassTraits<T>::closed);
  return box->value;
}

template <typename T>
void push_object(lua_State* L, std::shared_ptr<ClassObject<T>> object) {
  void* memory = lua_newuserdatauv(L, sizeof(Box<T>), 0);
  auto* box = new (memory) Box<T>();
  luaL_setmetatable(L, class_metatable<T>().c_str());
  box->value = std::move(object);
}

namespace class_detail {

template <typename T>
int close_box(lua_State* L) {
  if (auto* box = test_box<T>(L, 1)) box->value.reset();  // the emptied box needs no destructor
  return 0;
}

template <typename T, typename = void>
struct HasDescribe : std::false_type {};
template <typename T>
struct HasDescribe<T, std::void_t<decltype(ClassTraits<T>::describe)>> : std::true_type {};

template <typename T, typename = void>
struct HasLength : std::false_type {};
template <typename T>
struct HasLength<T, std::void_t<decltype(ClassTraits<T>::length)>> : std::true_type {};

template <typename T>
int tostring(lua_State* L) {
  auto* box = test_box<T>(L, 1);
  std::string text = std::string(ClassTraits<T>::name) + " (closed)";
  if (const auto held = box ? box->value : nullptr) {
    if constexpr (HasDescribe<T>::value) {
      text = ClassTraits<T>::describe(*held);  // must not raise: the REPL echoes with it
    } else {
      text = ClassTraits<T>::name;
    }
  }
  push_string(L, text);
  return 1;
}

template <typename T>
int length(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(ClassTraits<T>::length(*check_object<T>(L, 1))));
  return 1;
}

}  // namespace class_detail

// Pushes the field `key` of the object at index 1 (from its declared_result), false if it has none.
template <typename T>
bool push_declared_field(lua_State* L, const std::string& key);

template <typename T>
int index_object(lua_State* L) {
  return index_with_fields(L, [](lua_State* L, const std::string& key) { return push_declared_field<T>(L, key); });
}

// Registers T's metatable (see the top of this file); `methods` are T's Functions (entry_point.h's
// method<>) in static storage (Lua keeps pointers to them), `doc` the class's help text, shown under
// `doc_name` (default "lmkit.<Name>").
template <typename T>
void register_class(lua_State* L, const std::vector<Function>& methods, const char* doc, const char* doc_name = nullptr) {
  const std::string name = ClassTraits<T>::name;
  // Names for error messages ("bad argument #1 to 'Vocab indexing'"), alive as long as the Functions.
  static const std::string names[] = {name + " finalizer", name + " close", "tostring(" + name + ")",
                                      name + " indexing", "'#' on a " + name};
  static const std::vector<Function> metamethods = [] {
    std::vector<Function> list = {
        {"__gc", class_detail::close_box<T>, nullptr, names[0].c_str()},
        {"__close", class_detail::close_box<T>, nullptr, names[1].c_str()},
        {"__tostring", class_detail::tostring<T>, nullptr, names[2].c_str()},
        {"__index", index_object<T>, nullptr, names[3].c_str()},
    };
    if constexpr (class_detail::HasLength<T>::value) {
      list.push_back({"__len", class_detail::length<T>, nullptr, names[4].c_str()});
    }
    return list;
  }();
  register_class(L, class_metatable<T>().c_str(), ClassTraits<T>::name, metamethods.data(), metamethods.size(),
                 methods.data(), methods.size(), doc_name ? std::string(doc_name) : "lmkit." + name, doc);
}

}  // namespace lmkit::lua

// Declares Type's Lua class (see the top of this file) in namespace lmkit::lua. A class whose
// objects describe themselves or have a length writes the specialization out, adding
//   static std::string describe(const Object&);   // __tostring
//   static std::int64_t length(const Object&);    // __len
// and `closed` is what an argument error says of a closed object.
#define LMKIT_LUA_CLASS(Type, ObjectType, Name, Self)                    \
  template <>                                                            \
  struct ClassTraits<Type> {                                             \
    using Object = ObjectType;                                           \
    static constexpr const char* name = Name;                            \
    static constexpr const char* self = Self;                            \
    static constexpr const char* closed = "already closed or collected"; \
  }
