#include "bindings/lua_lm_analysis.h"

#include <string>
#include <vector>

#include "bindings/lua_call.h"
#include "bindings/lua_data.h"
#include "bindings/lua_heads.h"
#include "bindings/lua_model.h"
#include "bindings/lua_tensor.h"
#include "runtime/analysis/top_k_contexts.h"
#include "runtime/analysis/word_similarity.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::lua {
namespace {


// The embedding at `position`: an [N, d] Tensor, or a Model's input embedding.
torch::Tensor check_embedding(lua_State* L, int position) {
  if (auto* t = test_tensor(L, position)) {
    if (!t->defined()) throw ArgError(position, "tensor was already closed or collected");
    if (t->dim() != 2) {
      throw ArgError(position, "embedding must be a matrix [N, d], got " + integer_text(t->dim()) + "-D");
    }
    return *t;
  }
  if (luaL_testudata(L, position, kModelMetatable)) return check_model(L, position)->encoder->embedding;
  type_error(L, position, "Tensor or Model");
}

// options.benchmarks: nil (all 13), a name, or a list of names.
std::vector<analysis::BenchmarkName> check_benchmarks(lua_State* L, int options) {
  std::vector<analysis::BenchmarkName> chosen;
  if (lua_type(L, options) != LUA_TTABLE) return analysis::similarity_benchmark_names();
  lua_pushliteral(L, "benchmarks");
  const int type = lua_rawget(L, options);
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    return analysis::similarity_benchmark_names();
  }
  std::vector<std::string> names;
  if (type == LUA_TSTRING) {
    names.emplace_back(lua_tostring(L, -1));
  } else if (type == LUA_TTABLE) {
    const auto n = lua_rawlen(L, -1);
    for (lua_Unsigned i = 1; i <= n; ++i) {
      if (lua_rawgeti(L, -1, static_cast<lua_Integer>(i)) != LUA_TSTRING) {
        lua_pop(L, 2);
        throw ArgError(options, "option 'benchmarks': entry " + integer_text(i) + " is not a string");
      }
      names.emplace_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    if (names.empty()) {
      lua_pop(L, 1);
      throw ArgError(options, "option 'benchmarks' is an empty list");
    }
  } else {
    const std::string got = luaL_typename(L, -1);
    lua_pop(L, 1);
    throw ArgError(options, "option 'benchmarks' must be a name or a list of names, got " + got);
  }
  lua_pop(L, 1);
  for (const auto& name : names) {
    try {
      chosen.push_back(analysis::find_similarity_benchmark(name));
    } catch (const UsageError& e) {
      throw ArgError(options, e.what());
    }
  }
  return chosen;
}

int analysis_word_similarity(lua_State* L) {
  const auto embedding = check_embedding(L, 1);
  const auto vocab_holder = check_vocabulary(L, 2);
  const auto& vocab = *vocab_holder;
  Options options(L, 3, {"benchmarks", "dir", "case"});
  const auto benchmarks = check_benchmarks(L, 3);
  const auto dir_option = options.string("dir");
  analysis::CaseRule rule = analysis::CaseRule::kLower;
  if (const auto name = options.string("case")) {
    try {
      rule = analysis::parse_case_rule(*name);
    } catch (const UsageError& e) {
      throw ArgError(3, std::string("option 'case': ") + e.what());
    }
  }
  if (embedding.size(0) != vocab.size()) {
    throw ArgError(1, "the embedding has " + integer_text(embedding.size(0)) + " rows but the vocabulary " +
                          integer_text(vocab.size()) + " words");
  }
  const auto dir = analysis::locate_word_similarity(
      dir_option ? std::optional<std::filesystem::path>(*dir_option) : std::nullopt);
  const analysis::SimilarityLookup lookup(vocab, rule);
  std::vector<analysis::SimilarityResult> results;
  std::vector<std::string> files;
  for (const auto& b : benchmarks) {
    const auto benchmark = analysis::read_similarity_benchmark(dir / b.file, b.name);
    results.push_back(analysis::evaluate_similarity(embedding, lookup, benchmark));
    files.push_back(benchmark.file.string());
  }
  lua_createtable(L, static_cast<int>(results.size()), 0);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    lua_createtable(L, 0, 7);
    set_string(L, "name", r.name);
    set_string(L, "file", files[i]);
    set_integer(L, "pairs", r.pairs);
    set_integer(L, "kept", r.kept);
    set_integer(L, "skipped", r.skipped);
    set_integer(L, "repeated", r.repeated);
    set_number(L, "spearman", r.spearman);
    set_number(L, "p", r.pvalue);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// One model's results at the top of the stack: a list of {name=, spearman=} tables.
std::vector<analysis::SimilarityResult> read_results(lua_State* L, int position, std::size_t model) {
  const std::string where = "results " + integer_text(model);
  if (lua_type(L, -1) != LUA_TTABLE) throw ArgError(position, where + " is not a table");
  std::vector<analysis::SimilarityResult> results;
  const auto n = lua_rawlen(L, -1);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    const std::string entry = where + ", entry " + integer_text(i);
    if (lua_rawgeti(L, -1, static_cast<lua_Integer>(i)) != LUA_TTABLE) {
      lua_pop(L, 1);
      throw ArgError(position, entry + " is not a table");
    }
    analysis::SimilarityResult r;
    if (get_field_raw(L, -1, "name") != LUA_TSTRING) {
      lua_pop(L, 2);
      throw ArgError(position, entry + ": field 'name' must be a string");
    }
    r.name = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (get_field_raw(L, -1, "spearman") != LUA_TNUMBER) {
      lua_pop(L, 2);
      throw ArgError(position, entry + ": field 'spearman' must be a number");
    }
    r.spearman = lua_tonumber(L, -1);
    lua_pop(L, 2);
    results.push_back(std::move(r));
  }
  return results;
}

int analysis_similarity_wins(lua_State* L) {
  check_type(L, 1, LUA_TTABLE, "table");
  std::vector<std::vector<analysis::SimilarityResult>> models;
  const auto n = lua_rawlen(L, 1);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    lua_rawgeti(L, 1, static_cast<lua_Integer>(i));
    models.push_back(read_results(L, 1, i));
    lua_pop(L, 1);
  }
  if (models.size() < 2) throw ArgError(1, "need the results of at least 2 models, got " + integer_text(models.size()));
  std::vector<std::vector<std::int64_t>> wins;
  std::vector<std::int64_t> best;
  try {
    wins = analysis::similarity_wins(models);
    best = analysis::similarity_best_counts(models);
  } catch (const UsageError& e) {
    throw ArgError(1, e.what());
  }
  lua_createtable(L, static_cast<int>(wins.size()), 0);
  for (std::size_t a = 0; a < wins.size(); ++a) {
    lua_createtable(L, static_cast<int>(wins[a].size()), 0);
    for (std::size_t b = 0; b < wins[a].size(); ++b) {
      lua_pushinteger(L, wins[a][b]);
      lua_rawseti(L, -2, static_cast<lua_Integer>(b + 1));
    }
    lua_rawseti(L, -2, static_cast<lua_Integer>(a + 1));
  }
  lua_createtable(L, static_cast<int>(best.size()), 0);
  for (std::size_t a = 0; a < best.size(); ++a) {
    lua_pushinteger(L, best[a]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(a + 1));
  }
  return 2;
}

int analysis_similarity_benchmarks(lua_State* L) {
  const auto& names = analysis::similarity_benchmark_names();
  lua_createtable(L, static_cast<int>(names.size()), 0);
  for (std::size_t i = 0; i < names.size(); ++i) {
    lua_createtable(L, 0, 2);
    set_string(L, "name", names[i].name);
    set_string(L, "file", names[i].file);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// contexts: a list of strings or {text=, next=} tables.
std::vector<analysis::Context> check_contexts(lua_State* L, int position) {
  check_type(L, position, LUA_TTABLE, "table of contexts");
  std::vector<analysis::Context> contexts;
  const auto n = lua_rawlen(L, position);
  for (lua_Unsigned i = 1; i <= n; ++i) {
    const std::string entry = "context " + integer_text(i);
    const int type = lua_rawgeti(L, position, static_cast<lua_Integer>(i));
    analysis::Context context;
    if (type == LUA_TSTRING) {
      context.text = lua_tostring(L, -1);
    } else if (type == LUA_TTABLE) {
      if (get_field_raw(L, -1, "text") != LUA_TSTRING) {
        lua_pop(L, 2);
        throw ArgError(position, entry + ": field 'text' must be a string");
      }
      context.text = lua_tostring(L, -1);
      lua_pop(L, 1);
      const int next = get_field_raw(L, -1, "next");
      if (next == LUA_TSTRING) {
        context.next = lua_tostring(L, -1);
      } else if (next != LUA_TNIL) {
        lua_pop(L, 2);
        throw ArgError(position, entry + ": field 'next' must be a string or nil");
      }
      lua_pop(L, 1);
    } else {
      lua_pop(L, 1);
      throw ArgError(position, entry + " must be a string or a {text=, next=} table");
    }
    lua_pop(L, 1);
    contexts.push_back(std::move(context));
  }
  return contexts;
}

void push_contexts(lua_State* L, const std::vector<analysis::Context>& contexts) {
  lua_createtable(L, static_cast<int>(contexts.size()), 0);
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    lua_createtable(L, 0, 2);
    set_string(L, "text", contexts[i].text);
    if (contexts[i].next) set_string(L, "next", *contexts[i].next);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

int analysis_top_k_contexts(lua_State* L) {
  LanguageModel model = check_model(L, 1);  // alive even if a Lua head closes it
  const auto vocab = check_vocabulary(L, 2);
  const auto contexts = check_contexts(L, 3);
  Options options(L, 4, {"k", "unk", "stream", "bptt"});
  const auto k = options.integer("k").value_or(5);
  const auto unk = options.string("unk");
  const auto bptt = options.integer("bptt").value_or(70);
  std::optional<torch::Tensor> stream;
  if (options.present()) {
    if (get_field_raw(L, 4, "stream") != LUA_TNIL) {
      auto* t = test_tensor(L, -1);
      if (!t || !t->defined() || t->dim() != 1 || t->scalar_type() != torch::kInt64) {
        lua_pop(L, 1);
        throw ArgError(4, "option 'stream' must be a 1-D int64 Tensor of token ids (e.g. corpus.test)");
      }
      stream = *t;
    }
    lua_pop(L, 1);
  }
  std::vector<analysis::ContextPrediction> predictions;
  {
    LuaCallScope scope(L);  // a head written in Lua calls back on this thread
    predictions = stream ? analysis::top_k_in_stream(model, *vocab, *stream, contexts, k, bptt, unk)
                         : analysis::top_k_contexts(model, *vocab, contexts, k, unk);
  }
  lua_createtable(L, static_cast<int>(predictions.size()), 0);
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    const auto& p = predictions[i];
    lua_createtable(L, 0, 8);
    set_string(L, "context", p.text);
    set_string(L, "state", p.stream_position >= 0 ? "stream" : "zero");
    if (p.stream_position >= 0) set_integer(L, "position", p.stream_position + 1);
    lua_createtable(L, static_cast<int>(p.top.size()), 0);
    for (std::size_t j = 0; j < p.top.size(); ++j) {
      lua_createtable(L, 0, 3);
      set_string(L, "word", p.top[j].word);
      set_integer(L, "id", p.top[j].id);
      set_number(L, "prob", p.top[j].prob);
      lua_rawseti(L, -2, static_cast<lua_Integer>(j + 1));
    }
    lua_setfield(L, -2, "top");
    if (p.next) {
      set_string(L, "next", *p.next);
      set_number(L, "next_prob", p.next_prob);
      set_integer(L, "next_rank", p.next_rank);
      if (p.next_position > 0) {
        set_integer(L, "next_position", p.next_position);
      } else {
        lua_pushboolean(L, false);
        lua_setfield(L, -2, "next_position");
      }
    }
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

int analysis_read_contexts(lua_State* L) {
  push_contexts(L, analysis::read_contexts(check_string(L, 1)));
  return 1;
}

const Function kFunctions[] = {
    {"word_similarity", analysis_word_similarity,
     "lmkit.analysis.word_similarity(embedding_or_model, vocab[, {benchmarks=all, dir=nil, case=\"lower\"}]) -> {{name=, file=, pairs=, kept=, skipped=, repeated=, spearman=, p=}, ...}\n"
     "Spearman ρ between the cosine similarity of embedding rows and human scores on the 13 word-similarity benchmarks (thesis Tables 5.2–5.4), in the thesis's order. "
     "Pairs with a word outside the vocabulary are skipped and counted; a pair listed again enters ρ once, with its later score (repeated counts them). benchmarks: names (\"WS-353\", \"SimLex-999\", ... or file names); "
     "dir: the folder of EN-*.txt files (default $LMKIT_DATA/word-similarity, then ./data/word-similarity); case: \"lower\" looks up each benchmark word lowercased (as Faruqui & Dyer's script, "
     "which the thesis follows; consistent with its Table 5.2), \"exact\" as spelled, \"fold\" also ignores the vocabulary's case. spearman and p are nan when fewer than 2 pairs are kept."},
    {"similarity_wins", analysis_similarity_wins,
     "lmkit.analysis.similarity_wins({results_1, results_2, ...}) -> wins, best\n"
     "Compares models' word_similarity results: wins[a][b] = number of benchmarks (matched by name) on which model a's ρ is strictly above model b's; "
     "best[a] = number of benchmarks on which model a has the highest ρ (ties count for each tied model; thesis Fig. 5.3)."},
    {"similarity_benchmarks", analysis_similarity_benchmarks,
     "lmkit.analysis.similarity_benchmarks() -> {{name=, file=}, ...}\nThe 13 word-similarity benchmarks in the thesis's order (Table 5.2) and their file names."},
    {"top_k_contexts", analysis_top_k_contexts,
     "lmkit.analysis.top_k_contexts(model, vocab, contexts[, {k=5, unk=nil, stream=nil, bptt=70}]) -> {{context=, state=, position=, top={{word=, id=, prob=}, ...}, next=, next_prob=, next_rank=, next_position=}, ...}\n"
     "The k most likely next words after each context (a string of words, or {text=, next=} with the true next word), in evaluation mode (thesis Table 5.1). "
     "Without stream, each context is read from a zero state (state = \"zero\"). With stream (token ids, e.g. corpus.test), each context is found in it and read off one evaluation of the stream "
     "(batch 1, windows of bptt, the state carried from its start: state = \"stream\", position = the 1-based index of its last word), as the thesis read Table 5.1; a context the stream lacks is read from a zero state. "
     "For a given next word: its probability, its rank among all words, and its position in top (false when absent). Unknown words are an error unless unk names their stand-in (e.g. \"<unk>\")."},
    {"read_contexts", analysis_read_contexts,
     "lmkit.analysis.read_contexts(path) -> {{text=, next=}, ...}\nContexts from a file: one per line as \"context<TAB>next word\" (the next word optional); blank lines and lines starting with '#' are skipped."},
};

}  // namespace

void open_lm_analysis(lua_State* L, int module_index) {
  module_index = lua_absindex(L, module_index);
  if (lua_getfield(L, module_index, "analysis") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, module_index, "analysis");
  }
  set_functions(L, -1, "lmkit.analysis", kFunctions);
  register_doc(L, -1, "lmkit.analysis",
               "lmkit.analysis — ranks and spectra of log-probability matrices; word similarity of embeddings and "
               "top-k next words of language models.");
  lua_pop(L, 1);
}

}  // namespace lmkit::lua
