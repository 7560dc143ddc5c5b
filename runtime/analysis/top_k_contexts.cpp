#include "runtime/analysis/top_k_contexts.h"

#include <cmath>
#include <fstream>

#include "runtime/core/error.h"
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
        throw UsageError(file.string() + ":" + std::to_string(number) + ": the next word after the tab must be one word, got '" +
                         next + "'");
      }
      if (!next.empty()) context.next = next;
    }
    if (context.text.empty()) {
      throw UsageError(file.string() + ":" + std::to_string(number) + ": empty context");
    }
    contexts.push_back(std::move(context));
  }
  return contexts;
}

std::vector<ContextPrediction> top_k_contexts(LanguageModel& model, const data::Vocabulary& vocab,
                                              const std::vector<Context>& contexts, std::int64_t k,
                                              const std::optional<std::string>& unk) {
  const auto n = model->options.encoder().vocab_size();
  if (vocab.size() != n) {
    throw UsageError("the vocabulary has " + std::to_string(vocab.size()) + " words but the model " +
                     std::to_string(n));
  }
  if (k < 1 || k > n) throw UsageError("k must be in [1, " + std::to_string(n) + "], got " + std::to_string(k));
  // Encode every context (and next word) first, so a bad word fails before any model work.
  std::vector<std::vector<std::int64_t>> encoded;
  std::vector<std::optional<std::int64_t>> targets;
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    const auto& context = contexts[i];
    const std::string which = "context " + std::to_string(i + 1) + ": ";
    try {
      encoded.push_back(vocab.encode(context.text, false, unk));
      if (encoded.back().empty()) throw UsageError("the context has no words");
      if (context.next) {
        const auto ids = vocab.encode(*context.next, false, unk);
        if (ids.size() != 1) throw UsageError("the next word must be one word, got '" + *context.next + "'");
        targets.push_back(ids[0]);
      } else {
        targets.push_back(std::nullopt);
      }
    } catch (const UsageError& e) {
      throw UsageError(which + e.what());
    }
  }

  EvalModeGuard eval_mode(model);
  torch::NoGradGuard no_grad;
  const auto device = model->encoder->embedding.device();
  std::vector<ContextPrediction> results;
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    auto ids = data::to_tensor(std::vector<std::int64_t>(encoded[i])).view({-1, 1}).to(device);
    auto [logp, hidden] = model->log_probs(ids, model->init_hidden(1));
    const auto last = logp[logp.size(0) - 1].to(torch::kCPU, torch::kFloat64);
    const auto [values, indices] = last.topk(k);
    ContextPrediction result;
    result.text = contexts[i].text;
    for (std::int64_t j = 0; j < k; ++j) {
      const auto id = indices[j].item<std::int64_t>();
      result.top.push_back({vocab.word(id), id, std::exp(values[j].item<double>())});
    }
    result.next = contexts[i].next;
    if (targets[i]) {
      const auto target = *targets[i];
      const double lp = last[target].item<double>();
      result.next_prob = std::exp(lp);
      result.next_rank = 1 + (last > lp).sum().item<std::int64_t>();
      for (std::int64_t j = 0; j < k; ++j) {
        if (result.top[static_cast<std::size_t>(j)].id == target) result.next_position = j + 1;
      }
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace lmkit::analysis
