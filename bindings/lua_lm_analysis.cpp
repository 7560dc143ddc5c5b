// lmkit.analysis (language-model part): word similarity of embeddings and the top-k next words of
// a model — runtime entry points bound by one line each (entry_point.h).
#include "bindings/lua_lm_analysis.h"

#include "bindings/entry_point.h"
#include "runtime/analysis/top_k_contexts.h"
#include "runtime/analysis/word_similarity.h"

namespace lmkit::lua {

void open_lm_analysis(lua_State* L, int module_index) {
  static const Function functions[] = {
      entry<&analysis::word_similarity>("lmkit.analysis", "word_similarity", "embedding_or_model, vocab",
          "Spearman ρ between the cosine similarity of embedding rows and human scores on the 13 word-similarity "
          "benchmarks (thesis Tables 5.2–5.4), in the thesis's order. Pairs with a word outside the vocabulary are "
          "skipped and counted; a pair listed again enters ρ once, with its later score (repeated counts them)."),
      entry<&analysis::compare_similarity>("lmkit.analysis", "similarity_wins", "results",
          "Compares models' word_similarity results ({results_1, results_2, ...}, each a list of {name=, spearman=}), "
          "benchmarks matched by name (thesis Fig. 5.3)."),
      entry<&analysis::similarity_benchmark_names>("lmkit.analysis", "similarity_benchmarks", "",
          "The 13 word-similarity benchmarks in the thesis's order (Table 5.2) and their file names."),
      entry<&analysis::top_k_rows>("lmkit.analysis", "top_k_contexts", "model, vocab, contexts",
          "The k most likely next words after each context (a string of words, or {text=, next=} with the true next "
          "word), in evaluation mode (thesis Table 5.1). A context the stream lacks is read from a zero state. For a "
          "given next word: its probability, its rank among all words, and its position in top."),
      entry<&analysis::read_contexts>("lmkit.analysis", "read_contexts", "path",
          "Contexts from a file: one per line as \"context<TAB>next word\" (the next word optional); blank lines and "
          "lines starting with '#' are skipped."),
  };
  luaL_getsubtable(L, module_index, "analysis");  // the module's own table: no metamethods
  set_functions(L, -1, "lmkit.analysis", functions);
  lua_pop(L, 1);
}

}  // namespace lmkit::lua
