// lmkit.data: corpora, vocabularies, batching, the BPTT sampler and synthetic languages in Lua.
#pragma once
#include <lua.hpp>

#include <memory>

#include "runtime/data/corpus.h"

namespace lmkit::lua {

// Sets lmkit.data (a table of functions) in the module table at module_index and registers the
// metatables of Corpus, Vocab, BpttSampler, EvalBatches and SyntheticLanguage.
void open_data(lua_State* L, int module_index);

// The corpus in the Corpus userdata at `position` (ArgError otherwise), as a copy (its tensors and
// vocabulary are shared, not copied): Lua code that runs before the caller is done with it (a
// finalizer at any allocation) may close the userdata. A new Corpus userdata.
data::Corpus check_corpus_value(lua_State* L, int position);
// The vocabulary in the Vocab userdata at `position` (ArgError otherwise), shared: it stays alive
// for the caller even if Lua code run meanwhile (a Lua head, a finalizer) closes the userdata.
std::shared_ptr<const data::Vocabulary> check_vocabulary(lua_State* L, int position);
void push_corpus_value(lua_State* L, data::Corpus corpus);

}  // namespace lmkit::lua
