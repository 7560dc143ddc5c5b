// lmkit.data: corpora, vocabularies, batching, the BPTT sampler and synthetic languages in Lua.
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

// Sets lmkit.data (a table of functions) in the module table at module_index and registers the
// classes Corpus, Vocab, BpttSampler, EvalBatches and SyntheticLanguage (bound_classes.h).
void open_data(lua_State* L, int module_index);

}  // namespace lmkit::lua
