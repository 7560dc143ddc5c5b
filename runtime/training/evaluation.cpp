#include "runtime/training/evaluation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/host_read.h"
#include "runtime/core/interruption.h"
#include "runtime/models/checked_tokens.h"
#include "runtime/data/batching.h"

namespace lmkit::training {

EvalResult eval_result(double total_nll, std::int64_t tokens) {
  EvalResult result;
  result.tokens = tokens;
  result.loss = total_nll / static_cast<double>(tokens);
  result.perplexity = std::exp(result.loss);
  return result;
}
namespace {

torch::Device model_device(LanguageModel& model) { return model->embedding().device(); }

}  // namespace

EvalResult evaluate(LanguageModel& model, const torch::Tensor& tokens, std::int64_t batch_size, std::int64_t bptt,
                    const EvalProgress& progress) {
  data::check_eval_stream(tokens, batch_size, bptt, "evaluate");
  check_token_ids(tokens, model->vocab_size(), "the evaluated tokens");
  const CheckedTokenStream checked;
  model->eval();
  torch::NoGradGuard no_grad;
  InterruptibleScope interruptible;
  const auto source = data::batchify(tokens, batch_size).to(model_device(model));
  data::EvalBatches batches(source, bptt);
  const auto total_windows = batches.size();
  auto hidden = model->init_hidden(batch_size);
  data::Batch batch;
  // Summed on the device in float64 (each window's mean loss times its tokens, as the host sum
  // did before) and read back once at the end: no synchronisation per window.
  auto total = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(source.device()));
  std::int64_t count = 0, done = 0;
  while (batches.next(batch)) {
    interruptible.poll("evaluate");
    auto out = model->loss(batch.input, batch.target, hidden);
    const auto n = batch.input.numel();
    total += out.loss.to(torch::kFloat64) * static_cast<double>(n);
    count += n;
    hidden = detach_state(out.hidden);
    if (progress) progress(++done, total_windows);
  }
  return eval_result(read_to_host(total)[0], count);
}

EvalResult dynamic_evaluate(LanguageModel& model, const torch::Tensor& train_tokens, const torch::Tensor& tokens,
                            const DynamicEvalOptions& options, const EvalProgress& progress) {
  data::check_eval_stream(train_tokens, options.stats_batch_size, options.bptt, "dynamic_evaluate (training stream)");
  data::check_eval_stream(tokens, options.batch_size, options.bptt, "dynamic_evaluate");
  check_token_ids(train_tokens, model->vocab_size(), "the training tokens");
  check_token_ids(tokens, model->vocab_size(), "the evaluated tokens");
  const CheckedTokenStream checked;
  if (!(options.lr >= 0) || !(options.lamb >= 0) || !(options.epsilon > 0)) {
    throw UsageError("dynamic_evaluate: lr and lamb must be ≥ 0 and epsilon > 0");
  }
  model->eval();
  InterruptibleScope interruptible;
  const auto device = model_device(model);
  std::vector<torch::Tensor> params;
  for (auto& p : model->parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  std::vector<torch::Tensor> original, rms, decay;
  for (auto& p : params) {
    original.push_back(p.detach().clone());
    rms.push_back(torch::zeros_like(p));
  }
  auto zero_grads = [&] {
    for (auto& p : params) p.mutable_grad().reset();
  };

  // 1. RMS gradient statistics on the training stream.
  {
    const auto source = data::batchify(train_tokens, options.stats_batch_size).to(device);
    data::EvalBatches batches(source, options.bptt);
    auto hidden = model->init_hidden(options.stats_batch_size);
    data::Batch batch;
    std::int64_t windows = 0;
    while ((options.max_stats_windows < 0 || windows < options.max_stats_windows) && batches.next(batch)) {
      interruptible.poll("dynamic_evaluate");
      zero_grads();
      auto out = model->loss(batch.input, batch.target, hidden);
      out.loss.backward();
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < params.size(); ++i) {
        if (params[i].grad().defined()) rms[i].addcmul_(params[i].grad(), params[i].grad());
      }
      hidden = detach_state(out.hidden);
      ++windows;
    }
    torch::NoGradGuard no_grad;
    double mean_sum = 0;
    for (auto& r : rms) {
      r.div_(static_cast<double>(std::max<std::int64_t>(windows, 1))).sqrt_();
      mean_sum += r.mean().item<double>();
    }
    if (!(mean_sum > 0)) throw UsageError("dynamic_evaluate: the training gradients are all zero; nothing to adapt with");
    // The decay toward θ₀ per weight, capped at 1 so that it never overshoots θ₀.
    for (auto& r : rms) decay.push_back((r / mean_sum * options.lamb).clamp_max_(1.0));
  }

  // 2. Score each window, then adapt to it.
  const auto source = data::batchify(tokens, options.batch_size).to(device);
  data::EvalBatches batches(source, options.bptt);
  const auto total_windows = batches.size();
  auto hidden = model->init_hidden(options.batch_size);
  data::Batch batch;
  // Summed on the device and read once at the end, as in evaluate.
  auto total = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(source.device()));
  std::int64_t count = 0, done = 0;
  try {
    while (batches.next(batch)) {
      interruptible.poll("dynamic_evaluate");
      zero_grads();
      auto out = model->loss(batch.input, batch.target, hidden);
      const auto n = batch.input.numel();
      total += out.loss.detach().to(torch::kFloat64) * static_cast<double>(n);
      count += n;
      out.loss.backward();
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < params.size(); ++i) {
        auto& p = params[i];
        if (p.grad().defined()) p.sub_(p.grad() / (rms[i] + options.epsilon) * options.lr);
        p.add_((original[i] - p) * decay[i]);
      }
      hidden = detach_state(out.hidden);
      if (progress) progress(++done, total_windows);
    }
  } catch (...) {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(original[i]);
    zero_grads();
    throw;
  }
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(original[i]);
  }
  zero_grads();
  return eval_result(read_to_host(total)[0], count);
}

const config::BoundOptions<DynamicEvalOptions>& declared_options(config::Tag<DynamicEvalOptions>) {
  using O = DynamicEvalOptions;
  using config::Range;
  static const config::BoundOptions<O> options(
      "dynamic_evaluate",
      {{"lr", &O::lr, Range::non_negative(), "the step size η"},
       {"lamb", &O::lamb, Range::non_negative(), "λ: the decay toward the trained weights"},
       {"epsilon", &O::epsilon, Range::positive(), "ε of the RMS normalizer"},
       {"bptt", &O::bptt, Range::at_least(1), "tokens per update"},
       {"batch_size", &O::batch_size, Range::at_least(1), "columns of the evaluated stream"},
       {"stats_batch_size", &O::stats_batch_size, Range::at_least(1), "columns of the gradient statistics' pass"},
       {"max_stats_windows", &O::max_stats_windows, Range::at_least(-1), "windows of the statistics' pass (−1: the whole training stream)"}});
  return options;
}

}  // namespace lmkit::training
