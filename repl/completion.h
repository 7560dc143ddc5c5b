// Tab completion for the REPL: global names and keywords, fields after '.', and methods after ':'
// (for tensors, the Tensor methods). Looks values up raw: completing never runs user code.
#pragma once
#include <lua.hpp>

#include <string>
#include <vector>

namespace lmkit::repl {

// Completions of `word` (e.g. "lmkit.ze", "t:su", "pri"), each a whole replacement for the word,
// sorted and unique.
std::vector<std::string> complete(lua_State* L, const std::string& word);

// Characters that end a word for completion: Lua's operators and brackets, but not '.' and ':'.
extern const char* const kWordBreakCharacters;

}  // namespace lmkit::repl
