// lmkit.data bindings. Each object is a std::shared_ptr held in a full userdata (created empty
// before anything can fail, reset by __gc/__close), with a metatable whose `methods` table serves
// __index, the REPL's completion and help(). Token ids stay 0-based: they are tensor values.
#include "bindings/lua_data.h"

#include <filesystem>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "bindings/lua_call.h"
#include "bindings/lua_tensor.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/data/batching.h"
#include "runtime/data/bptt_sampler.h"
#include "runtime/data/corpus.h"
#include "runtime/data/corpus_locator.h"
#include "runtime/data/corpus_request.h"
#include "runtime/data/synthetic_language.h"

namespace lmkit::lua {
namespace {

using data::Batch;
using data::BpttSampler;
using data::Corpus;
using data::EvalBatches;
using data::SyntheticLanguage;
using data::Vocabulary;

struct LuaCorpus {
  Corpus corpus;
  std::optional<data::LoadReport> report;
};

constexpr char kCorpusMeta[] = "lmkit.data.Corpus";
constexpr char kVocabMeta[] = "lmkit.data.Vocab";
constexpr char kSamplerMeta[] = "lmkit.data.BpttSampler";
constexpr char kEvalMeta[] = "lmkit.data.EvalBatches";
constexpr char kLanguageMeta[] = "lmkit.data.SyntheticLanguage";

template <typename T>
struct Box {
  std::shared_ptr<T> value;
};

// The object in the userdata at `position`, shared: a binding holds it for its whole call, since
// Lua code that runs meanwhile (a finalizer at any allocation, a callback) may close the userdata.
template <typename T, const char* Meta>
std::shared_ptr<T> check(lua_State* L, int position, const char* display) {
  auto* box = static_cast<Box<T>*>(luaL_testudata(L, position, Meta));
  if (!box) type_error(L, position, display);
  if (!box->value) throw ArgError(position, std::string(display) + " was already closed or collected");
  return box->value;
}

template <typename T, const char* Meta>
std::shared_ptr<T>& push_box(lua_State* L) {
  void* memory = lua_newuserdatauv(L, sizeof(Box<T>), 0);
  auto* box = new (memory) Box<T>();
  luaL_setmetatable(L, Meta);
  return box->value;
}

template <typename T, const char* Meta>
int box_gc(lua_State* L) {
  auto* box = static_cast<Box<T>*>(luaL_testudata(L, 1, Meta));
  if (box) box->value.reset();  // safe to finalize twice; the empty box needs no destructor
  return 0;
}


// Pushes methods[name] of the metatable on top of the stack, read raw (the tables are reachable from
// Lua through getmetatable, so they may have been given metamethods); throws if it is no function.
void push_method_named(lua_State* L, const char* name) {
  lua_pushliteral(L, "methods");
  const bool has_methods = lua_rawget(L, -2) == LUA_TTABLE;
  lua_pushstring(L, name);
  if (!has_methods || lua_rawget(L, -2) != LUA_TFUNCTION) {
    throw UsageError(std::string("the '") + name + "' method of this class was removed from its metatable");
  }
}

std::vector<std::int64_t> ids_argument(lua_State* L, int position) {
  if (auto* t = test_tensor(L, position)) {
    if (!t->defined()) throw ArgError(position, "tensor was already closed or collected");
    if (torch::isFloatingType(t->scalar_type()) || t->scalar_type() == torch::kBool) {
      throw ArgError(position, "token ids must be an integer tensor");
    }
    auto flat = t->detach().to(torch::kCPU).to(torch::kInt64).reshape({-1}).contiguous();
    return std::vector<std::int64_t>(flat.data_ptr<std::int64_t>(), flat.data_ptr<std::int64_t>() + flat.numel());
  }
  const auto listed = check_integer_list(L, position, "Tensor or table of ids");
  return std::vector<std::int64_t>(listed.begin(), listed.end());
}

// ---- Vocab ----------------------------------------------------------------------------------

using VocabRef = const Vocabulary;

std::shared_ptr<VocabRef> check_vocab(lua_State* L, int position) { return check<VocabRef, kVocabMeta>(L, position, "Vocab"); }

int vocab_size(lua_State* L) {
  lua_pushinteger(L, check_vocab(L, 1)->size());
  return 1;
}

int vocab_id(lua_State* L) {
  const auto v = check_vocab(L, 1);
  const auto id = v->find(check_string(L, 2));
  if (id) {
    lua_pushinteger(L, *id);
  } else {
    lua_pushnil(L);
  }
  return 1;
}

int vocab_word(lua_State* L) {
  const auto v = check_vocab(L, 1);
  const auto id = check_integer(L, 2);
  try {
    push_string(L, v->word(id));
  } catch (const UsageError& e) {
    throw ArgError(2, e.what());
  }
  return 1;
}

int vocab_encode(lua_State* L) {
  const auto v = check_vocab(L, 1);
  const auto text = check_string(L, 2);
  Options options(L, 3, {"eos", "unk"});
  auto ids = v->encode(text, options.boolean("eos").value_or(false), options.string("unk"));
  push_tensor(L, data::to_tensor(std::move(ids)));
  return 1;
}

int vocab_decode(lua_State* L) {
  const auto v = check_vocab(L, 1);
  const auto ids = ids_argument(L, 2);
  push_string(L, v->decode(ids));
  return 1;
}

int vocab_tostring(lua_State* L) {
  push_string(L, "Vocab(" + integer_text(check_vocab(L, 1)->size()) + " words)");
  return 1;
}

const Function kVocabMethods[] = {
    {"size", vocab_size, "vocab:size() -> integer\nNumber of words (also #vocab)."},
    {"id", vocab_id, "vocab:id(word) -> integer | nil\nThe word's id: the 0-based value that stands for it in token tensors; nil when absent."},
    {"word", vocab_word, "vocab:word(id) -> string\nThe word whose id (0-based tensor value) is `id`; an error outside [0, size)."},
    {"encode", vocab_encode, "vocab:encode(text[, {eos=false, unk=nil}]) -> Tensor\nWhitespace-separated words to an int64 tensor of ids; eos=true appends \"<eos>\"; unknown words are an error unless unk names a word (e.g. \"<unk>\") to use instead."},
    {"decode", vocab_decode, "vocab:decode(ids) -> string\nIds (an integer tensor of any shape, read in order, or a table) to words joined by spaces."},
};

const Function kVocabMeta_[] = {
    {"__gc", box_gc<VocabRef, kVocabMeta>, nullptr, "Vocab finalizer"},
    {"__close", box_gc<VocabRef, kVocabMeta>, nullptr, "Vocab close"},
    {"__tostring", vocab_tostring, nullptr, "tostring(Vocab)"},
    {"__len", vocab_size, nullptr, "'#' on a Vocab"},
    {"__index", index_with_fields<no_fields>, nullptr, "Vocab indexing"},
};

void push_vocab(lua_State* L, std::shared_ptr<const Vocabulary> vocab) {
  push_box<VocabRef, kVocabMeta>(L) = std::move(vocab);
}

// ---- Corpus ---------------------------------------------------------------------------------

std::shared_ptr<LuaCorpus> check_corpus(lua_State* L, int position) { return check<LuaCorpus, kCorpusMeta>(L, position, "Corpus"); }

bool corpus_field(lua_State* L, const std::string& key) {
  const auto c = check_corpus(L, 1);
  if (key == "train") {
    push_tensor(L, c->corpus.train);
  } else if (key == "valid") {
    push_tensor(L, c->corpus.valid);
  } else if (key == "test") {
    push_tensor(L, c->corpus.test);
  } else if (key == "vocab") {
    push_vocab(L, c->corpus.vocab);
  } else if (key == "name") {
    push_string(L, c->corpus.name);
  } else if (key == "protocol") {
    push_string(L, c->corpus.protocol);
  } else if (key == "source") {
    push_string(L, c->corpus.source);
  } else if (key == "from_cache") {
    lua_pushboolean(L, c->report && c->report->from_cache);
  } else if (key == "cache_status") {
    push_string(L, c->report ? c->report->cache_status : "none (generated)");
  } else if (key == "cache_file") {
    if (c->report && !c->report->cache_file.empty()) {
      push_string(L, c->report->cache_file.string());
    } else {
      lua_pushnil(L);
    }
  } else {
    return false;
  }
  return true;
}

std::string corpus_summary_text(const LuaCorpus& c) {
  return "Corpus " + c.corpus.name + " (" + c.corpus.protocol + "): vocab " + integer_text(c.corpus.vocab->size()) +
         ", train " + integer_text(c.corpus.train.numel()) + ", valid " + integer_text(c.corpus.valid.numel()) +
         ", test " + integer_text(c.corpus.test.numel()) + " tokens; " + c.corpus.source;
}

int corpus_tostring(lua_State* L) {
  push_string(L, corpus_summary_text(*check_corpus(L, 1)));
  return 1;
}

const Function kCorpusMethods[] = {
    {"summary", corpus_tostring, "corpus:summary() -> string\nName, protocol, vocabulary size, token counts and source, on one line."},
};

const Function kCorpusMeta_[] = {
    {"__gc", box_gc<LuaCorpus, kCorpusMeta>, nullptr, "Corpus finalizer"},
    {"__close", box_gc<LuaCorpus, kCorpusMeta>, nullptr, "Corpus close"},
    {"__tostring", corpus_tostring, nullptr, "tostring(Corpus)"},
    {"__index", index_with_fields<corpus_field>, nullptr, "Corpus indexing"},
};

void push_corpus(lua_State* L, LuaCorpus corpus) {
  push_box<LuaCorpus, kCorpusMeta>(L) = std::make_shared<LuaCorpus>(std::move(corpus));
}

}  // namespace

data::Corpus check_corpus_value(lua_State* L, int position) { return check_corpus(L, position)->corpus; }

void push_corpus_value(lua_State* L, data::Corpus corpus) { push_corpus(L, LuaCorpus{std::move(corpus), std::nullopt}); }

namespace {

// ---- Synthetic languages --------------------------------------------------------------------

std::shared_ptr<SyntheticLanguage> check_language(lua_State* L, int position) {
  return check<SyntheticLanguage, kLanguageMeta>(L, position, "SyntheticLanguage");
}

constexpr std::initializer_list<const char*> kSyntheticKeys = {"vocab", "states", "dim", "bias", "kind",
                                                               "scale", "transition_scale", "seed"};

data::SyntheticOptions synthetic_options(const Options& o) {
  data::SyntheticOptions s;
  s.vocab = o.integer("vocab").value_or(s.vocab);
  s.states = o.integer("states").value_or(s.states);
  s.dim = o.integer("dim").value_or(s.dim);
  s.bias = o.boolean("bias").value_or(s.bias);
  s.kind = o.string("kind").value_or(s.kind);
  s.scale = o.number("scale").value_or(s.scale);
  s.transition_scale = o.number("transition_scale").value_or(s.transition_scale);
  const auto seed = o.integer("seed").value_or(1);
  if (seed < 0) throw ArgError(1, "option 'seed' must be non-negative");
  s.seed = static_cast<std::uint64_t>(seed);
  return s;
}

int data_synthetic(lua_State* L) {
  Options o(L, 1, kSyntheticKeys);
  auto options = synthetic_options(o);
  auto& slot = push_box<SyntheticLanguage, kLanguageMeta>(L);
  slot = std::make_shared<SyntheticLanguage>(options);
  return 1;
}

std::int64_t check_count(lua_State* L, int position, const char* what) {
  const auto n = check_integer(L, position);
  if (n < 0) throw ArgError(position, std::string(what) + " must be non-negative");
  return n;
}

int language_generate(lua_State* L) {
  const auto lang = check_language(L, 1);
  const auto n = check_count(L, 2, "token count");
  std::optional<std::uint64_t> seed;
  if (auto s = opt_integer(L, 3)) seed = static_cast<std::uint64_t>(*s);
  push_tensor(L, lang->generate(n, seed));
  return 1;
}

int language_log_probs(lua_State* L) {
  const auto lang = check_language(L, 1);
  push_tensor(L, lang->log_probs(check_tensor(L, 2)));
  return 1;
}

int language_nll(lua_State* L) {
  const auto lang = check_language(L, 1);
  push_tensor(L, lang->nll(check_tensor(L, 2)));
  return 1;
}

int language_entropy_rate(lua_State* L) {
  const auto lang = check_language(L, 1);
  const auto n = opt_integer(L, 2).value_or(200000);
  lua_pushnumber(L, lang->entropy_rate(n));
  return 1;
}

int language_best_perplexity(lua_State* L) {
  const auto lang = check_language(L, 1);
  const auto n = opt_integer(L, 2).value_or(200000);
  lua_pushnumber(L, std::exp(lang->entropy_rate(n)));
  return 1;
}

int language_expected_rank(lua_State* L) {
  const auto r = check_language(L, 1)->expected_rank();
  if (r < 0) {
    lua_pushnil(L);
  } else {
    lua_pushinteger(L, r);
  }
  return 1;
}

int language_corpus(lua_State* L) {
  const auto lang = check_language(L, 1);
  Options o(L, 2, {"train", "valid", "test"});
  LuaCorpus c;
  c.corpus = lang->corpus(o.integer("train").value_or(200000), o.integer("valid").value_or(20000),
                         o.integer("test").value_or(20000));
  push_corpus(L, std::move(c));
  return 1;
}

int language_tostring(lua_State* L) {
  push_string(L, check_language(L, 1)->describe());
  return 1;
}

const Function kLanguageMethods[] = {
    {"generate", language_generate, "lang:generate(n[, seed]) -> Tensor\nn tokens (int64 [n]) continuing the language's stream; a seed restarts the stream first. Same seed, same tokens."},
    {"log_probs", language_log_probs, "lang:log_probs(tokens) -> Tensor\nThe true log P(· | context) for every position of a sequence (from the language's start): float64 [n, vocab], each row normalized."},
    {"nll", language_nll, "lang:nll(tokens) -> Tensor\nThe true −log P(token | context) per position: float64 [n]."},
    {"entropy_rate", language_entropy_rate, "lang:entropy_rate([n=200000]) -> number\nNats per token: the mean true NLL of a fresh sample of n tokens (the stream is left as it is)."},
    {"best_perplexity", language_best_perplexity, "lang:best_perplexity([n=200000]) -> number\nexp(entropy rate): the perplexity of the true distribution, no model does better in expectation."},
    {"expected_rank", language_expected_rank, "lang:expected_rank() -> integer | nil\nThe rank of the true log-probability matrix by construction (kind \"softmax\": dim + 1, +1 with bias); nil for \"hmm\" (high rank)."},
    {"corpus", language_corpus, "lang:corpus([{train=200000, valid=20000, test=20000}]) -> Corpus\nA corpus of three consecutive samples, vocabulary \"w0\"..\"w<V-1>\"."},
};

const Function kLanguageMeta_[] = {
    {"__gc", box_gc<SyntheticLanguage, kLanguageMeta>, nullptr, "SyntheticLanguage finalizer"},
    {"__close", box_gc<SyntheticLanguage, kLanguageMeta>, nullptr, "SyntheticLanguage close"},
    {"__tostring", language_tostring, nullptr, "tostring(SyntheticLanguage)"},
    {"__index", index_with_fields<no_fields>, nullptr, "SyntheticLanguage indexing"},
};

// ---- corpus{} -------------------------------------------------------------------------------

int data_corpus(lua_State* L) {
  Options o(L, 1, {"name", "path", "protocol", "cache", "cache_dir", "vocab", "states", "dim", "bias", "kind",
                   "scale", "transition_scale", "seed", "train", "valid", "test"});
  data::CorpusRequest request;
  request.name = o.string("name");
  request.path = o.string("path");
  request.protocol = o.string("protocol");
  request.cache = o.boolean("cache");
  request.cache_dir = o.string("cache_dir");
  request.synthetic = synthetic_options(o);
  request.train = o.integer("train");
  request.valid = o.integer("valid");
  request.test = o.integer("test");
  if (o.present()) {
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
      if (lua_type(L, -2) == LUA_TSTRING) request.given.insert(lua_tostring(L, -2));
      lua_pop(L, 1);
    }
  }
  LuaCorpus c;
  if (data::reads_files(request)) c.report.emplace();
  try {
    c.corpus = data::make_corpus(request, c.report ? &*c.report : nullptr);
  } catch (const UsageError& e) {
    const std::string text = e.what();
    if (text.rfind("option '", 0) == 0) throw ArgError(1, text);  // an option of the other kind: the table's
    throw;
  }
  push_corpus(L, std::move(c));
  return 1;
}

// ---- batching -------------------------------------------------------------------------------

int data_batchify(lua_State* L) {
  const auto& tokens = check_tensor(L, 1);
  const auto bsz = check_integer(L, 2);
  push_tensor(L, data::batchify(tokens, bsz));
  return 1;
}

void push_batch(lua_State* L, const Batch& b) {
  push_tensor(L, b.input);
  push_tensor(L, b.target);
}

std::shared_ptr<EvalBatches> check_eval(lua_State* L, int position) { return check<EvalBatches, kEvalMeta>(L, position, "EvalBatches"); }

int eval_next(lua_State* L) {
  const auto batches = check_eval(L, 1);
  Batch b;
  if (!batches->next(b)) {
    lua_pushnil(L);
    return 1;
  }
  push_batch(L, b);
  return 2;
}

int eval_size(lua_State* L) {
  lua_pushinteger(L, check_eval(L, 1)->size());
  return 1;
}

int eval_reset(lua_State* L) {
  check_eval(L, 1)->reset();
  lua_settop(L, 1);
  return 1;
}

const Function kEvalMethods[] = {
    {"next", eval_next, "batches:next() -> input, target | nil\nThe next [len, bsz] input and its next-token target; nil after the last batch."},
    {"size", eval_size, "batches:size() -> integer\nNumber of batches: ⌈(nbatch − 1) / bptt⌉."},
    {"reset", eval_reset, "batches:reset() -> batches\nStarts again from the first batch."},
};

const Function kEvalMeta_[] = {
    {"__gc", box_gc<EvalBatches, kEvalMeta>, nullptr, "EvalBatches finalizer"},
    {"__close", box_gc<EvalBatches, kEvalMeta>, nullptr, "EvalBatches close"},
    {"__len", eval_size, nullptr, "'#' on EvalBatches"},
    {"__index", index_with_fields<no_fields>, nullptr, "EvalBatches indexing"},
};

// for input, target in lmkit.data.eval_batches(source, bptt) do ... end
int data_eval_batches(lua_State* L) {
  const auto& source = check_tensor(L, 1);
  const auto bptt = check_integer(L, 2);
  auto batches = std::make_shared<EvalBatches>(source, bptt);
  lua_settop(L, 2);
  luaL_getmetatable(L, kEvalMeta);
  push_method_named(L, "next");  // the iterator function
  push_box<EvalBatches, kEvalMeta>(L) = std::move(batches);
  return 2;
}

std::shared_ptr<BpttSampler> check_sampler(lua_State* L, int position) { return check<BpttSampler, kSamplerMeta>(L, position, "BpttSampler"); }

int sampler_next(lua_State* L) {
  const auto sampler = check_sampler(L, 1);
  Batch b;
  if (!sampler->next(b)) {
    lua_pushnil(L);
    return 1;
  }
  push_batch(L, b);
  lua_pushnumber(L, b.lr_scale);
  lua_pushinteger(L, b.seq_len);
  return 4;
}

int sampler_batches(lua_State* L) {
  check_sampler(L, 1);
  lua_settop(L, 1);
  lua_getmetatable(L, 1);
  push_method_named(L, "next");
  lua_insert(L, 1);
  lua_settop(L, 2);
  return 2;
}

int sampler_state(lua_State* L) {
  push_string(L, check_sampler(L, 1)->state());
  return 1;
}

int sampler_set_state(lua_State* L) {
  const auto sampler = check_sampler(L, 1);
  const auto state = check_string(L, 2);
  try {
    sampler->set_state(state);
  } catch (const UsageError& e) {
    throw ArgError(2, e.what());
  }
  lua_settop(L, 1);
  return 1;
}

int sampler_epoch(lua_State* L) {
  lua_pushinteger(L, check_sampler(L, 1)->epoch());
  return 1;
}

int sampler_draw_length(lua_State* L) {
  lua_pushinteger(L, check_sampler(L, 1)->draw_length());
  return 1;
}

const Function kSamplerMethods[] = {
    {"next", sampler_next, "sampler:next() -> input, target, lr_scale, seq_len | nil\nThe next training window ([seq_len, bsz] input and next-token target) and the learning-rate factor seq_len/bptt; nil at the end of an epoch, after which the next call starts the next epoch."},
    {"batches", sampler_batches, "sampler:batches() -> iterator\nfor input, target, lr_scale, seq_len in sampler:batches() do ... end — the rest of the current epoch."},
    {"state", sampler_state, "sampler:state() -> string\nThe generator, position and epoch count: save it in a checkpoint to resume identically."},
    {"set_state", sampler_set_state, "sampler:set_state(state) -> sampler\nRestores a string from sampler:state(); the rest of the epoch then replays exactly."},
    {"epoch", sampler_epoch, "sampler:epoch() -> integer\nCompleted epochs."},
    {"draw_length", sampler_draw_length, "sampler:draw_length() -> integer\nDraws one window length (consumes randomness, like next())."},
};

const Function kSamplerMeta_[] = {
    {"__gc", box_gc<BpttSampler, kSamplerMeta>, nullptr, "BpttSampler finalizer"},
    {"__close", box_gc<BpttSampler, kSamplerMeta>, nullptr, "BpttSampler close"},
    {"__index", index_with_fields<no_fields>, nullptr, "BpttSampler indexing"},
};

int data_bptt_sampler(lua_State* L) {
  Options o(L, 1, {"data", "bptt", "seed", "p_full", "sd", "min_len", "max_delta"});
  if (!o.present()) throw ArgError(1, "options table expected: {data=batchified tensor, bptt=70, seed=...}");
  lua_pushliteral(L, "data");
  lua_rawget(L, 1);
  auto* source = test_tensor(L, -1);
  if (!source || !source->defined()) throw ArgError(1, "option 'data' must be a batchified Tensor (lmkit.data.batchify)");
  torch::Tensor data = *source;
  lua_pop(L, 1);
  data::BpttSamplerOptions options;
  options.bptt = o.integer("bptt").value_or(options.bptt);
  options.p_full = o.number("p_full").value_or(options.p_full);
  options.sd = o.number("sd").value_or(options.sd);
  options.min_len = o.integer("min_len").value_or(options.min_len);
  options.max_delta = o.integer("max_delta").value_or(options.max_delta);
  const auto seed = o.integer("seed").value_or(0);
  if (seed < 0) throw ArgError(1, "option 'seed' must be non-negative");
  options.seed = static_cast<std::uint64_t>(seed);
  auto sampler = std::make_shared<BpttSampler>(std::move(data), options);
  push_box<BpttSampler, kSamplerMeta>(L) = std::move(sampler);
  return 1;
}

// lmkit.data.locate(name[, {path=, roots={...}}]) -> folder
int data_locate(lua_State* L) {
  const std::string name = check_string(L, 1);
  Options o(L, 2, {"path", "roots"});
  std::optional<std::filesystem::path> path;
  if (const auto p = o.string("path")) path = *p;
  std::vector<std::filesystem::path> roots;
  if (o.present() && get_field_raw(L, 2, "roots") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TTABLE) throw ArgError(2, "option 'roots' must be a list of folders");
    const auto n = lua_rawlen(L, -1);
    for (lua_Unsigned i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, static_cast<lua_Integer>(i));
      if (lua_type(L, -1) != LUA_TSTRING) throw ArgError(2, "roots[" + integer_text(i) + "] must be a string");
      roots.emplace_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 2);
  push_string(L, data::locate_corpus(name, path, roots).string());
  return 1;
}

const Function kDataFunctions[] = {
    {"locate", data_locate,
     "lmkit.data.locate(name[, {path=, roots={...}}]) -> string\n"
     "The folder of a corpus (or another data folder, e.g. \"word-similarity\") as lmkit.data.corpus finds it:\n"
     "path=, else $LMKIT_DATA/<name>, else ./data/<name>, then <root>/<name> for each of roots (\"\" skipped).\n"
     "An error names every folder tried and how to get the data."},
    {"corpus", data_corpus,
     "lmkit.data.corpus{name=, path=, protocol=\"full\", cache=true, cache_dir=} -> Corpus\n"
     "A corpus with .train/.valid/.test (int64 token tensors of 0-based ids), .vocab, .name, .protocol,\n"
     ".source, .from_cache, .cache_status, .cache_file. Real corpora (name=\"ptb\", \"wikitext-2\"/\"wt2\",\n"
     "\"wikitext-103\") come from path=, else $LMKIT_DATA/<name>, else ./data/<name>; protocol=\"mini\" uses\n"
     "only valid.txt and test.txt (train = first 90% of valid's lines). Without a name: path='s corpus, named\n"
     "after its folder, or with no path the built-in synthetic corpus; name=\"synthetic\" takes\n"
     "lmkit.data.synthetic's options and train=, valid=, test= sizes."},
    {"batchify", data_batchify,
     "lmkit.data.batchify(tokens, bsz) -> Tensor\n"
     "[n] → [⌊n/bsz⌋, bsz]: column j is the j-th contiguous run of the stream; the tail is dropped."},
    {"eval_batches", data_eval_batches,
     "lmkit.data.eval_batches(source, bptt) -> iterator, EvalBatches\n"
     "for input, target in lmkit.data.eval_batches(source, 70) do ... end — windows of bptt rows (the last\n"
     "shorter) over a batchified tensor; target is input shifted by one token."},
    {"bptt_sampler", data_bptt_sampler,
     "lmkit.data.bptt_sampler{data=, bptt=70, seed=0, p_full=0.95, sd=5, min_len=5, max_delta=40} -> BpttSampler\n"
     "AWD-LSTM's training order: windows of length max(min_len, ⌊N(bptt', sd)⌋) capped at bptt+max_delta, with\n"
     "bptt' = bptt w.p. p_full else bptt/2; each comes with lr_scale = seq_len/bptt. Its state saves and restores."},
    {"synthetic", data_synthetic,
     "lmkit.data.synthetic{vocab=1000, states=64, dim=16, bias=true, kind=\"softmax\", scale=2, transition_scale=2, seed=1} -> SyntheticLanguage\n"
     "A language with known true next-token distributions: kind \"softmax\" (the state follows from the previous\n"
     "word; log-prob matrix of rank dim+1, +1 with bias) or \"hmm\" (hidden states; high rank). See docs/data.md."},
};

}  // namespace

void open_data(lua_State* L, int module_index) {
  module_index = lua_absindex(L, module_index);
  register_class(L, kVocabMeta, "Vocab", kVocabMeta_, kVocabMethods, "lmkit.data.Vocab",
             "lmkit.data.Vocab — words ↔ ids in order of first appearance. Ids are 0-based because they are the\n"
             "values in token tensors (embedding rows): vocab:word(corpus.train[1]:item()) is the first word.");
  register_class(L, kCorpusMeta, "Corpus", kCorpusMeta_, kCorpusMethods, "lmkit.data.Corpus",
             "lmkit.data.Corpus — fields train, valid, test (int64 tensors), vocab, name, protocol, source,\n"
             "from_cache, cache_status, cache_file.");
  register_class(L, kLanguageMeta, "SyntheticLanguage", kLanguageMeta_, kLanguageMethods, "lmkit.data.SyntheticLanguage",
             "lmkit.data.SyntheticLanguage — a generator with known true next-token log-probabilities.");
  register_class(L, kEvalMeta, "EvalBatches", kEvalMeta_, kEvalMethods, "lmkit.data.EvalBatches",
             "lmkit.data.EvalBatches — fixed-length evaluation windows over a batchified tensor.");
  register_class(L, kSamplerMeta, "BpttSampler", kSamplerMeta_, kSamplerMethods, "lmkit.data.BpttSampler",
             "lmkit.data.BpttSampler — AWD-LSTM's variable-length training windows with a saveable state.");
  lua_newtable(L);
  set_functions(L, -1, "lmkit.data", kDataFunctions);
  lua_setfield(L, module_index, "data");
}

std::shared_ptr<const data::Vocabulary> check_vocabulary(lua_State* L, int position) { return check_vocab(L, position); }

}  // namespace lmkit::lua
