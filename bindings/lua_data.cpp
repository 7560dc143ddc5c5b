// lmkit.data: each function and method a runtime entry point bound by one line (entry_point.h);
// only the two iterators are written out. Token ids stay 0-based: they are tensor values.
#include "bindings/lua_data.h"

#include "bindings/entry_point.h"
#include "runtime/data/corpus_locator.h"
#include "runtime/data/corpus_request.h"
#include "runtime/data/unigram.h"

namespace lmkit::lua {
namespace {

// Pushes the `next` method of class T (read raw: the methods table is reachable from Lua).
template <typename T>
void push_next_method(lua_State* L) {
  luaL_getmetatable(L, class_metatable<T>().c_str());
  lua_pushliteral(L, "methods");
  const bool has_methods = lua_rawget(L, -2) == LUA_TTABLE;
  lua_pushliteral(L, "next");
  if (!has_methods || lua_rawget(L, -2) != LUA_TFUNCTION) {
    throw UsageError("the 'next' method of " + std::string(ClassTraits<T>::name) + " was removed from its metatable");
  }
  lua_replace(L, -3);
  lua_pop(L, 1);
}

// for input, target in lmkit.data.eval_batches(source, bptt) do ... end
int eval_batches(lua_State* L) {
  auto batches = std::make_shared<data::EvalBatches>(check_tensor(L, 1), check_integer(L, 2));
  lua_settop(L, 2);
  push_next_method<data::EvalBatches>(L);
  push_object<data::EvalBatches>(L, std::move(batches));
  return 2;
}

// for input, target, lr_scale, seq_len in sampler:batches() do ... end
int sampler_batches(lua_State* L) {
  check_object<data::BpttSampler>(L, 1);
  lua_settop(L, 1);
  push_next_method<data::BpttSampler>(L);
  lua_insert(L, 1);
  return 2;
}

}  // namespace

void open_data(lua_State* L, int module_index) {
  using namespace data;
  module_index = lua_absindex(L, module_index);
  static const std::vector<Function> vocab_methods = {
      method<&Vocabulary::size>("size", "", "Number of words (also #vocab)."),
      method<&Vocabulary::find>("id", "word", "The word's id: the 0-based value that stands for it in token tensors; nil when absent."),
      method<&Vocabulary::word>("word", "id", "The word whose id (0-based tensor value) is `id`; an error outside [0, size)."),
      method<&encode_text>("encode", "text", "Whitespace-separated words to an int64 tensor of ids."),
      method<&Vocabulary::decode>("decode", "ids", "Ids (an integer tensor of any shape, read in order, or a table) to words joined by spaces."),
  };
  register_class<Vocabulary>(L, vocab_methods, "lmkit.data.Vocab — words ↔ ids in order of first appearance. Ids are 0-based because they are the\n"
     "values in token tensors (embedding rows): vocab:word(corpus.train[1]:item()) is the first word.", "lmkit.data.Vocab");
  static const std::vector<Function> corpus_methods = {
      method<&corpus_summary>("summary", "", "Name, protocol, vocabulary size, token counts and source, on one line."),
      method<&unigram_perplexity>("unigram_perplexity", "split, smoothing", "The unigram yardstick: perplexity on `split` (nil: \"test\") of the training split's word frequencies, add-`smoothing` (nil: 0.5), no context. A model near it has learnt little beyond word frequencies."),
  };
  register_class<Corpus>(L, corpus_methods, "lmkit.data.Corpus — fields train, valid, test (int64 tensors), vocab, name, protocol, source,\n"
     "from_cache, cache_status, cache_file.", "lmkit.data.Corpus");
  static const std::vector<Function> language_methods = {
      method<&SyntheticLanguage::generate>("generate", "n, seed", "n tokens (int64 [n]) continuing the language's stream; a seed restarts the stream first. Same seed, same tokens."),
      method<&SyntheticLanguage::log_probs>("log_probs", "tokens", "The true log P(· | context) for every position of a sequence (from the language's start): float64 [n, vocab], each row normalized."),
      method<&SyntheticLanguage::nll>("nll", "tokens", "The true −log P(token | context) per position: float64 [n]."),
      method<&sampled_entropy_rate>("entropy_rate", "n", "Nats per token: the mean true NLL of a fresh sample of n tokens (nil: 200000; the stream is left as it is)."),
      method<&best_perplexity>("best_perplexity", "n", "exp(entropy rate): the perplexity of the true distribution, no model does better in expectation."),
      method<&known_rank>("expected_rank", "", "The rank of the true log-probability matrix by construction (kind \"softmax\": dim + 1, +1 with bias); nil for \"hmm\" (high rank)."),
      method<&language_corpus>("corpus", "", "A corpus of three consecutive samples, vocabulary \"w0\"..\"w<V-1>\"."),
  };
  register_class<SyntheticLanguage>(L, language_methods, "lmkit.data.SyntheticLanguage — a generator with known true next-token log-probabilities.", "lmkit.data.SyntheticLanguage");
  static const std::vector<Function> eval_methods = {
      method<&EvalBatches::next_batch>("next", "", "The next [len, bsz] input and its next-token target; nil after the last batch."),
      method<&EvalBatches::size>("size", "", "Number of batches: ⌈(nbatch − 1) / bptt⌉."),
      method<&EvalBatches::reset>("reset", "", "Starts again from the first batch."),
  };
  register_class<EvalBatches>(L, eval_methods, "lmkit.data.EvalBatches — fixed-length evaluation windows over a batchified tensor.", "lmkit.data.EvalBatches");
  static const std::vector<Function> sampler_methods = {
      method<&BpttSampler::next_window>("next", "", "The next training window ([seq_len, bsz] input and next-token target) and the learning-rate factor seq_len/bptt; nil at the end of an epoch, after which the next call starts the next epoch."),
      {"batches", sampler_batches, "sampler:batches() -> iterator\nfor input, target, lr_scale, seq_len in sampler:batches() do ... end — the rest of the current epoch."},
      method<&BpttSampler::state>("state", "", "The generator, position and epoch count: save it in a checkpoint to resume identically."),
      method<&BpttSampler::set_state>("set_state", "state", "Restores a string from sampler:state(); the rest of the epoch then replays exactly."),
      method<&BpttSampler::epoch>("epoch", "", "Completed epochs."),
      method<&BpttSampler::draw_length>("draw_length", "", "Draws one window length (consumes randomness, like next())."),
  };
  register_class<BpttSampler>(L, sampler_methods, "lmkit.data.BpttSampler — AWD-LSTM's variable-length training windows with a saveable state.", "lmkit.data.BpttSampler");

  static const Function functions[] = {
      entry<&locate_folder>("lmkit.data", "locate", "name",
          "The folder of a corpus (or another data folder, e.g. \"word-similarity\") as lmkit.data.corpus finds it: path=, else "
          "$LMKIT_DATA/<name>, else ./data/<name>, then <root>/<name> for each of roots. An error names every folder tried and how to get the data."),
      entry<&open_corpus>("lmkit.data", "corpus", "",
          "A corpus with .train/.valid/.test (int64 token tensors of 0-based ids), .vocab, .name, .protocol, .source, .from_cache, "
          ".cache_status, .cache_file. Real corpora (name=\"ptb\", \"wikitext-2\"/\"wt2\", \"wikitext-103\") come from path=, else "
          "$LMKIT_DATA/<name>, else ./data/<name>. Without a name: path='s corpus, named after its folder, or with no path the built-in "
          "synthetic corpus; name=\"synthetic\" takes lmkit.data.synthetic's options and train=, valid=, test= sizes; options of the other kind are refused."),
      entry<&batchify>("lmkit.data", "batchify", "tokens, bsz",
          "[n] → [⌊n/bsz⌋, bsz]: column j is the j-th contiguous run of the stream; the tail is dropped."),
      {"eval_batches", eval_batches,
       "lmkit.data.eval_batches(source, bptt) -> iterator, EvalBatches\n"
       "for input, target in lmkit.data.eval_batches(source, 70) do ... end — windows of bptt rows (the last\n"
       "shorter) over a batchified tensor; target is input shifted by one token."},
      entry<&make_bptt_sampler>("lmkit.data", "bptt_sampler", "",
          "AWD-LSTM's training order: windows of length max(min_len, ⌊N(bptt', sd)⌋) capped at bptt+max_delta, with bptt' = bptt "
          "w.p. p_full else bptt/2; each comes with lr_scale = seq_len/bptt. Its state saves and restores."),
      entry<&make_synthetic_language>("lmkit.data", "synthetic", "",
          "A language with known true next-token distributions: kind \"softmax\" (the state follows from the previous word; "
          "log-prob matrix of rank dim+1, +1 with bias) or \"hmm\" (hidden states; high rank). See docs/data.md."),
  };
  lua_newtable(L);
  set_functions(L, -1, "lmkit.data", functions);
  lua_setfield(L, module_index, "data");
}

}  // namespace lmkit::lua
