#include "repl/completion.h"

#include <algorithm>
#include <cctype>

namespace lmkit::repl {

const char* const kWordBreakCharacters = " \t\n\"\\'`@$><=;|&{(}),[]+-*/%^~#";

namespace {

const char* const kKeywords[] = {"and", "break", "do", "else", "elseif", "end", "false", "for",
                                 "function", "goto", "if", "in", "local", "nil", "not", "or",
                                 "repeat", "return", "then", "true", "until", "while"};

bool is_identifier(const char* s) {
  if (!s || !(std::isalpha(static_cast<unsigned char>(*s)) || *s == '_')) return false;
  for (; *s; ++s)
    if (!(std::isalnum(static_cast<unsigned char>(*s)) || *s == '_')) return false;
  return true;
}

// Pushes the table whose keys describe the value at `index`'s fields: the value itself when it
// is a table, else its metatable's "methods" or "__index" table. Returns false (nothing pushed)
// when there is none.
bool push_field_table(lua_State* L, int index) {
  index = lua_absindex(L, index);
  if (lua_type(L, index) == LUA_TTABLE) {
    lua_pushvalue(L, index);
    return true;
  }
  if (!lua_getmetatable(L, index)) return false;
  for (const char* field : {"methods", "__index"}) {
    lua_pushstring(L, field);
    if (lua_rawget(L, -2) == LUA_TTABLE) {
      lua_remove(L, -2);
      return true;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return false;
}

// Adds the string keys of the table at `index` (and of its metatable's __index table, once) that
// start with `partial`; with `functions_only`, only those holding functions.
void collect_keys(lua_State* L, int index, const std::string& partial, bool functions_only,
                  std::vector<std::string>& keys, int depth = 0) {
  index = lua_absindex(L, index);
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      const char* key = lua_tostring(L, -2);
      const bool callable = lua_type(L, -1) == LUA_TFUNCTION;
      if (is_identifier(key) && std::string(key).rfind(partial, 0) == 0 && (!functions_only || callable)) {
        keys.emplace_back(key);
      }
    }
    lua_pop(L, 1);
  }
  if (depth == 0 && lua_getmetatable(L, index)) {
    lua_pushliteral(L, "__index");
    if (lua_rawget(L, -2) == LUA_TTABLE) collect_keys(L, -1, partial, functions_only, keys, depth + 1);
    lua_pop(L, 2);
  }
}

}  // namespace

std::vector<std::string> complete(lua_State* L, const std::string& word) {
  const int top = lua_gettop(L);
  std::vector<std::string> keys;
  const auto separator_at = word.find_last_of(".:");
  if (separator_at == std::string::npos) {
    lua_pushglobaltable(L);
    collect_keys(L, -1, word, false, keys);
    for (const char* keyword : kKeywords)
      if (std::string(keyword).rfind(word, 0) == 0) keys.emplace_back(keyword);
    lua_settop(L, top);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
  }
  const std::string path = word.substr(0, separator_at);
  const char separator = word[separator_at];
  const std::string partial = word.substr(separator_at + 1);

  // Walk the path ("lmkit.Tensor", "t") from the globals, raw, through field tables.
  lua_pushglobaltable(L);
  std::size_t start = 0;
  while (true) {
    const auto end = path.find_first_of(".:", start);
    const std::string name = path.substr(start, end - start);
    if (!is_identifier(name.c_str()) || !push_field_table(L, -1)) {
      lua_settop(L, top);
      return {};
    }
    lua_pushlstring(L, name.data(), name.size());
    lua_rawget(L, -2);
    if (lua_isnil(L, -1)) {
      lua_settop(L, top);
      return {};
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (push_field_table(L, -1)) collect_keys(L, -1, partial, separator == ':', keys);
  lua_settop(L, top);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (auto& key : keys) key = path + separator + key;
  return keys;
}

}  // namespace lmkit::repl
