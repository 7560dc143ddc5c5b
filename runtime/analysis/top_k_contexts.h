// Next-word predictions for chosen contexts (thesis Table 5.1, after Yang et al.'s MoS paper).
//
// A context is a string of whitespace-separated words (PTB's tokens, "<eos>" between sentences),
// optionally with the true next word. The model reads it in evaluation mode (no dropout; the
// model's mode is restored afterwards), either
//   from a zero hidden state (top_k_contexts), or
//   where it occurs in a token stream (top_k_in_stream): the thesis read Table 5.1 off its running
//   evaluation of PTB's test split (batch 1, bptt 70, the hidden state carried from the start),
//   so all the text before a context shapes the prediction, not only the context;
// and its distribution P(·|context) after the last word gives:
//   top      the k most likely next words with their probabilities, most likely first
//   next_*   for the true next word w: P(w|context), its rank 1 + #{v : P(v) > P(w)} among all N
//            words, and its position in `top` (0 when it is not among the k).
//
// Contexts file (recipes/data/table5_1_contexts.txt): one context per line, "context<TAB>next"
// (the tab and the next word are optional); blank lines and lines starting with '#' are skipped.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/data/vocabulary.h"
#include "runtime/models/language_model.h"

namespace lmkit::analysis {

struct Context {
  std::string text;
  std::optional<std::string> next;
};
inline auto declared_result(config::Tag<Context>) {
  return config::result_table_or_first(config::result_field("text", &Context::text, "the context's words"),
                              config::result_field("next", &Context::next, "the true next word, if known"));
}

struct Prediction {
  std::string word;
  std::int64_t id = 0;
  double prob = 0.0;
};
inline auto declared_result(config::Tag<Prediction>) {
  return config::result_table(config::result_field("word", &Prediction::word, "a next word"),
                              config::result_field("id", &Prediction::id, "its 0-based id"),
                              config::result_field("prob", &Prediction::prob, "its probability"));
}

struct ContextPrediction {
  std::string text;
  std::vector<Prediction> top;  // k entries, descending probability
  std::optional<std::string> next;
  double next_prob = 0.0;         // when next is given
  std::int64_t next_rank = 0;     // 1-based among all words
  std::int64_t next_position = 0; // 1-based in `top`, 0 when absent
  // Where the prediction was read: the 0-based stream index of the context's last word, or −1
  // for a reading from a zero state (top_k_contexts, or a context the stream does not contain).
  std::int64_t stream_position = -1;
};

// Reads a contexts file (format above); UsageError "file:line: ..." for a line with an empty
// context, EnvironmentError naming a missing file.
std::vector<Context> read_contexts(const std::filesystem::path& file);

// Words not in the vocabulary are an error naming the word, unless `unk` names a vocabulary word
// (e.g. "<unk>") that stands in for them. 1 ≤ k ≤ N.
std::vector<ContextPrediction> top_k_contexts(LanguageModel& model, const data::Vocabulary& vocab,
                                              const std::vector<Context>& contexts, std::int64_t k,
                                              const std::optional<std::string>& unk = std::nullopt);

// Each context at its first occurrence in `tokens` (1-D int64 ids of `vocab`), read off one
// evaluation of the stream in windows of `bptt` tokens with batch size 1 and the state carried
// (evaluation stops after the last context found). A context the stream does not contain is read
// from a zero state instead (stream_position −1), so a cut-down stream still gives every row.
std::vector<ContextPrediction> top_k_in_stream(LanguageModel& model, const data::Vocabulary& vocab,
                                               const torch::Tensor& tokens, const std::vector<Context>& contexts,
                                               std::int64_t k, std::int64_t bptt = 70,
                                               const std::optional<std::string>& unk = std::nullopt);

// Both readings as one request (lmkit.analysis.top_k_contexts): in `stream` when one is given.
struct TopKOptions {
  std::int64_t k = 5;
  std::optional<std::string> unk;
  torch::Tensor stream;
  std::int64_t bptt = 70;
};
const config::BoundOptions<TopKOptions>& declared_options(config::Tag<TopKOptions>);

// A prediction as a report row: where it was read and, for a known next word, how it fared.
struct TopKRow {
  std::string context;
  std::string state;                      // "stream" or "zero"
  std::optional<std::int64_t> position;   // stream: the 1-based index of the context's last word
  std::vector<Prediction> top;
  std::optional<std::string> next;
  std::optional<double> next_prob;
  std::optional<std::int64_t> next_rank, next_position;  // next_position: nil when not in top
};
inline auto declared_result(config::Tag<TopKRow>) {
  using R = TopKRow;
  using config::result_field;
  return config::result_table(
      result_field("context", &R::context, "the context"),
      result_field("state", &R::state, "\"stream\" (read off the stream) or \"zero\" (from a zero state)"),
      result_field("position", &R::position, "stream: the 1-based index of its last word"),
      result_field("top", &R::top, "the k most likely next words {word=, id=, prob=}, most likely first"),
      result_field("next", &R::next, "the true next word, when given"),
      result_field("next_prob", &R::next_prob, "its probability"),
      result_field("next_rank", &R::next_rank, "its rank among all words"),
      result_field("next_position", &R::next_position, "its position in top (nil when absent)"));
}
std::vector<TopKRow> top_k_rows(LanguageModel& model, const data::Vocabulary& vocab, const std::vector<Context>& contexts,
                                const TopKOptions& options);

}  // namespace lmkit::analysis
