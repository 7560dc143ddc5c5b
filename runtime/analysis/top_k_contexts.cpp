#include "runtime/analysis/top_k_contexts.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/data/batching.h"
#include "runtime/data/corpus.h"

namespace lmkit::analysis {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// Restores the model's training flag when the analysis ends (also on an exception).
class EvalModeGuard {
 public:
  explicit EvalModeGuard(LanguageModel& model) : model_(model), was_training_(model->is_training()) {
    model_->eval();
  }
  ~EvalModeGuard() { model_->train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  LanguageModel& model_;
  bool was_training_;
};

}  // namespace

std::vector<Context> read_contexts(const std::filesystem::path& file) {
  require_readable_file(file.string(), "contexts file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw EnvironmentError("cannot read contexts file " + file.string());
  std::vector<Context> contexts;
  std::string line;
  std::int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty() || line[0] == '#') continue;
    Context context;
    const auto tab = line.find('\t');
    context.text = trim(line.substr(0, tab));
    if (tab != std::string::npos) {
      const auto next = trim(line.substr(tab + 1));
      if (next.find_first_of(" \t") != std::string::npos) {
        throw UsageError(file.string() + ":" + integer_text(number) + ": the next word after the tab must be one word, got '" +
                         next + "'");
      }
      if (!next.empty()) context.next = next;
    }
    if (context.text.empty()) {
      throw UsageError(file.string() + ":" + integer_text(number) + ": empty context");
    }
    contexts.push_back(std::move(context));
  }
  return contexts;
}

namespace {

struct EncodedContexts {
  std::vector<std::vector<std::int64_t>> words;
  std::vector<std::optional<std::int64_t>> targets;
};

// Every context (and next word) encoded first, so a bad word fails before any model work.
EncodedContexts encode_contexts(LanguageModel& model, const data::Vocabulary& vocab, const std::vector<Context>& contexts,
                                std::int64_t k, const std::optional<std::string>& unk) {
  const auto n = model->vocab_size();
  if (vocab.size() != n) {
    throw UsageError("the vocabulary has " + integer_text(vocab.size()) + " words but the model " +
                     integer_text(n));
  }
  if (k < 1 || k > n) throw UsageError("k must be in [1, " + integer_text(n) + "], got " + integer_text(k));
  EncodedContexts encoded;
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    const auto& context = contexts[i];
    const std::string which = "context " + integer_text(i + 1) + ": ";
    try {
      encoded.words.push_back(vocab.encode(context.text, false, unk));
      if (encoded.words.back().empty()) throw UsageError("the context has no words");
      if (context.next) {
        const auto ids = vocab.encode(*context.next, false, unk);
        if (ids.size() != 1) throw UsageError("the next word must be one word, got '" + *context.next + "'");
        encoded.targets.push_back(ids[0]);
      } else {
        encoded.targets.push_back(std::nullopt);
      }
    } catch (const UsageError& e) {
      throw UsageError(which + e.what());
    }
  }
  return encoded;
}

// The prediction from log P(·|context) (a [N] row), for context i.
ContextPrediction predict(const torch::Tensor& log_probs_row, const data::Vocabulary& vocab, const Context& context,
                          const std::optional<std::int64_t>& target, std::int64_t k) {
  const auto last = log_probs_row.to(torch::kCPU, torch::kFloat64);
  const auto [values, indices] = last.topk(k);
  ContextPrediction result;
  result.text = context.text;
  for (std::int64_t j = 0; j < k; ++j) {
    const auto id = indices[j].item<std::int64_t>();
    result.top.push_back({vocab.word(id), id, std::exp(values[j].item<double>())});
  }
  result.next = context.next;
  if (target) {
    const double lp = last[*target].item<double>();
    result.next_prob = std::exp(lp);
    result.next_rank = 1 + (last > lp).sum().item<std::int64_t>();
    for (std::int64_t j = 0; j < k; ++j) {
      if (result.top[static_cast<std::size_t>(j)].id == *target) result.next_position = j + 1;
    }
  }
  return result;
}

ContextPrediction predict_from_zero_state(LanguageModel& model, const data::Vocabulary& vocab, const Context& context,
                                          const std::vector<std::int64_t>& words,
                                          const std::optional<std::int64_t>& target, std::int64_t k) {
  const auto device = model->embedding().device();
  auto ids = data::to_tensor(std::vector<std::int64_t>(words)).view({-1, 1}).to(device);
  auto [logp, hidden] = model->log_probs(ids, model->init_hidden(1));
  return predict(logp[logp.size(0) - 1], vocab, context, target, k);
}

// The 0-based index of the last word of the first occurrence of `words` in `stream`, or −1.
std::int64_t find_in_stream(const std::vector<std::int64_t>& stream, const std::vector<std::int64_t>& words) {
  const auto found = std::search(stream.begin(), stream.end(), words.begin(), words.end());
  if (found == stream.end()) return -1;
  return static_cast<std::int64_t>(found - stream.begin()) + static_cast<std::int64_t>(words.size()) - 1;
}

}  // namespace

std::vector<ContextPrediction> top_k_contexts(LanguageModel& model, const data::Vocabulary& vocab,
                                              const std::vector<Context>& contexts, std::int64_t k,
                                              const std::optional<std::string>& unk) {
  const auto encoded = encode_contexts(model, vocab, contexts, k, unk);
  EvalModeGuard eval_mode(model);
  torch::NoGradGuard no_grad;
  std::vector<ContextPrediction> results;
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    results.push_back(predict_from_zero_state(model, vocab, contexts[i], encoded.words[i], encoded.targets[i], k));
  }
  return results;
}

std::vector<ContextPrediction> top_k_in_stream(LanguageModel& model, const data::Vocabulary& vocab,
                                               const torch::Tensor& tokens, const std::vector<Context>& contexts,
                                               std::int64_t k, std::int64_t bptt, const std::optional<std::string>& unk) {
  const auto encoded = encode_contexts(model, vocab, contexts, k, unk);
  data::check_eval_stream(tokens, 1, bptt, "top_k_in_stream");
  check_token_ids(tokens, model->vocab_size(), "the stream");
  const auto flat = tokens.to(torch::kCPU).contiguous();
  const std::vector<std::int64_t> stream(flat.data_ptr<std::int64_t>(), flat.data_ptr<std::int64_t>() + flat.numel());
  std::vector<std::int64_t> positions;
  std::int64_t last_needed = -1;
  for (const auto& words : encoded.words) {
    positions.push_back(find_in_stream(stream, words));
    last_needed = std::max(last_needed, positions.back());
  }

  EvalModeGuard eval_mode(model);
  torch::NoGradGuard no_grad;
  std::vector<ContextPrediction> results(contexts.size());
  const auto device = model->embedding().device();
  auto hidden = model->init_hidden(1);
  InterruptibleScope interruptible;
  // Windows of bptt inputs from the start, as an evaluation of the stream reads them.
  for (std::int64_t start = 0; start <= last_needed; start += bptt) {
    interruptible.poll("top_k_in_stream");
    const auto length = std::min(bptt, last_needed + 1 - start);
    auto input = flat.narrow(0, start, length).view({-1, 1}).to(device);
    auto encoded_window = model->encode(input, hidden);
    hidden = detach_state(encoded_window.state);
    for (std::size_t i = 0; i < contexts.size(); ++i) {
      const auto at = positions[i];
      if (at < start || at >= start + length) continue;
      const auto row = encoded_window.output.narrow(0, at - start, 1);
      const auto logp = model->head->log_probs(row, model->decoder());
      results[i] = predict(logp[0], vocab, contexts[i], encoded.targets[i], k);
      results[i].stream_position = at;
    }
  }
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    if (positions[i] < 0) {
      results[i] = predict_from_zero_state(model, vocab, contexts[i], encoded.words[i], encoded.targets[i], k);
    }
  }
  return results;
}

const config::BoundOptions<TopKOptions>& declared_options(config::Tag<TopKOptions>) {
  using O = TopKOptions;
  using config::Range;
  static const config::BoundOptions<O> options(
      "top_k_contexts",
      {{"k", &O::k, Range::at_least(1), "next words per context"},
       {"unk", &O::unk, "the vocabulary word that stands in for unknown words (e.g. \"<unk>\"); nil: they are an error"},
       {"stream", &O::stream, "token ids (e.g. corpus.test) to find each context in and read it off one evaluation of (batch 1, "
                              "windows of bptt, the state carried), as the thesis read Table 5.1; nil: each from a zero state"},
       {"bptt", &O::bptt, Range::at_least(1), "the stream's window length"}});
  return options;
}

std::vector<TopKRow> top_k_rows(LanguageModel& model, const data::Vocabulary& vocab, const std::vector<Context>& contexts,
                                const TopKOptions& options) {
  if (options.stream.defined() && (options.stream.dim() != 1 || options.stream.scalar_type() != torch::kInt64)) {
    throw UsageError("top_k_contexts: option 'stream' must be a 1-D int64 Tensor of token ids (e.g. corpus.test)");
  }
  const auto predictions = options.stream.defined()
                               ? top_k_in_stream(model, vocab, options.stream, contexts, options.k, options.bptt, options.unk)
                               : top_k_contexts(model, vocab, contexts, options.k, options.unk);
  std::vector<TopKRow> rows;
  for (const auto& p : predictions) {
    TopKRow row;
    row.context = p.text;
    row.state = p.stream_position >= 0 ? "stream" : "zero";
    if (p.stream_position >= 0) row.position = p.stream_position + 1;
    row.top = p.top;
    if (p.next) {
      row.next = p.next;
      row.next_prob = p.next_prob;
      row.next_rank = p.next_rank;
      if (p.next_position > 0) row.next_position = p.next_position;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace lmkit::analysis
