#include "runtime/training/device_smoke_test.h"

#include <chrono>
#include <cmath>
#include <exception>

#include "runtime/core/device.h"
#include "runtime/core/exception_text.h"
#include "runtime/core/host_read.h"
#include "runtime/data/batching.h"
#include "runtime/data/synthetic_language.h"
#include "runtime/models/language_model.h"
#include "runtime/training/gradient_clipping.h"
#include "runtime/training/optimizer.h"

namespace lmkit::training {
namespace {

constexpr std::int64_t kVocab = 50, kBatch = 4, kBptt = 12;

LanguageModel quiet_model(const nlohmann::json& head, std::uint64_t seed) {
  seed_torch(seed);
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(kVocab).emb(16).nhid(24).nhidlast(16).nlayers(2)
                .dropout(0).dropouth(0).dropouti(0).dropoute(0).wdrop(0));
  o.head(head);
  return LanguageModel(o);
}

// SGD with the protocol's clipping on consecutive windows; the loss of each step.
std::vector<double> train_losses(LanguageModel model, const torch::Tensor& source, std::int64_t steps) {
  model->train();
  std::vector<torch::Tensor> params;
  for (auto& p : model->parameters()) params.push_back(p);
  Optimizer optimizer("sgd", {{"main", params, 5.0, 1.2e-6}});
  auto hidden = model->init_hidden(kBatch);
  std::vector<double> losses;
  const auto windows = (source.size(0) - 1) / kBptt;
  for (std::int64_t step = 0; step < steps; ++step) {
    const auto start = (step % windows) * kBptt;
    const auto input = source.narrow(0, start, kBptt);
    const auto target = source.narrow(0, start + 1, kBptt);
    optimizer.zero_grad();
    hidden = detach_state(hidden);
    auto out = model->loss(input, target, hidden);
    (out.loss + out.ar + out.tar).backward();
    hidden = out.hidden;
    const auto host = read_to_host(torch::stack({out.loss.detach().to(torch::kFloat64), gradient_norm(params)}));
    losses.push_back(host[0]);
    const double coefficient = 0.25 / (host[1] + 1e-6);
    if (coefficient < 1) scale_gradients(params, coefficient);
    optimizer.step();
  }
  return losses;
}

}  // namespace

std::vector<SmokeTestResult> device_smoke_test(const torch::Device& device, const SmokeTestOptions& options) {
  auto heads = options.heads;
  if (heads.empty()) {
    heads = {{{"kind", "softmax"}},
             {{"kind", "gss"}, {"c", 0.0}, {"k", 2.0}},
             {{"kind", "plif"}, {"K", 1000}, {"T", 10.0}},
             {{"kind", "mos"}, {"K", 3}, {"dropoutl", 0.0}}};  // no dropout anywhere: no random masks
  }
  data::SyntheticOptions language_options;
  language_options.vocab = kVocab;
  language_options.seed = options.seed;
  const auto tokens = data::SyntheticLanguage(language_options).generate(kBatch * (kBptt * 8 + 1), options.seed);
  const auto source = data::batchify(tokens, kBatch);
  std::vector<SmokeTestResult> results;
  for (const auto& head : heads) {
    SmokeTestResult r;
    r.head = head.value("kind", "?");
    const auto start = std::chrono::steady_clock::now();
    try {
      r.cpu_losses = train_losses(quiet_model(head, options.seed), source, options.steps);
      auto model = quiet_model(head, options.seed);
      model->to(device);
      // TF32 (cuDNN's LSTM and cuBLAS on Ampere and later, on by default for cuDNN) rounds to 10
      // bits of mantissa: the comparison is of float32 against float32.
      auto& context = at::globalContext();
      const bool tf32_cudnn = context.allowTF32CuDNN(), tf32_cublas = context.allowTF32CuBLAS();
      context.setAllowTF32CuDNN(false);
      context.setAllowTF32CuBLAS(false);
      try {
        r.device_losses = train_losses(model, source.to(device), options.steps);
      } catch (...) {
        context.setAllowTF32CuDNN(tf32_cudnn);
        context.setAllowTF32CuBLAS(tf32_cublas);
        throw;
      }
      context.setAllowTF32CuDNN(tf32_cudnn);
      context.setAllowTF32CuBLAS(tf32_cublas);
      bool finite = true;
      for (std::size_t i = 0; i < r.cpu_losses.size(); ++i) {
        finite = finite && std::isfinite(r.cpu_losses[i]) && std::isfinite(r.device_losses[i]);
        r.max_difference = std::max(r.max_difference, std::abs(r.device_losses[i] - r.cpu_losses[i]));
      }
      r.passed = finite && r.max_difference <= options.tolerance;
      if (!finite) r.failure = "a loss is not finite";
    } catch (...) {
      r.failure = describe_exception(std::current_exception());  // Torch's text without its C++ backtrace
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace lmkit::training
