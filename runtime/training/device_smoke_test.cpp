#include "runtime/training/device_smoke_test.h"

#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <set>

#include "runtime/core/device.h"
#include "runtime/core/exception_text.h"
#include "runtime/core/host_read.h"
#include "runtime/data/batching.h"
#include "runtime/data/synthetic_language.h"
#include "runtime/heads/head_registry.h"
#include "runtime/models/encoder_registry.h"
#include "runtime/models/language_model.h"
#include "runtime/training/gradient_clipping.h"
#include "runtime/training/optimizer.h"

namespace lmkit::training {
namespace {

constexpr std::int64_t kVocab = 50, kBatch = 4, kBptt = 12;

LanguageModel quiet_model(const SmokeSetup& setup, std::uint64_t seed) {
  seed_torch(seed);
  auto config = setup.encoder;
  config["vocab_size"] = kVocab;
  config["head"] = setup.head;
  return LanguageModel(language_model_options_from_json(config));
}

// The trainer's groups: the head's own-rate parameters (PLIF's slopes) at its rate, the rest at lr.
std::vector<ParameterGroup> smoke_groups(LanguageModel& model, double lr) {
  std::set<const void*> own;
  for (const auto& p : model->head->own_lr_parameters()) own.insert(p.unsafeGetTensorImpl());
  ParameterGroup main{"main", {}, lr, 1.2e-6};
  ParameterGroup own_group{"own_lr", {}, model->head->own_lr().value_or(lr), 1.2e-6};
  for (auto& p : model->parameters()) (own.count(p.unsafeGetTensorImpl()) ? own_group : main).params.push_back(p);
  std::vector<ParameterGroup> groups{main};
  if (!own_group.params.empty()) groups.push_back(own_group);
  return groups;
}

// SGD with the protocol's clipping on consecutive windows; the loss of each step. With noise > 0,
// every parameter is multiplied by (1 + noise·N(0, 1)) after each step (draws on the CPU from a
// generator of its own, so the run's own random state is untouched).
std::vector<double> train_losses(LanguageModel model, const SmokeSetup& setup, const torch::Tensor& source,
                                 std::int64_t steps, double noise, std::uint64_t seed,
                                 const std::function<void()>& after_step) {
  model->train();
  std::vector<torch::Tensor> params;
  for (auto& p : model->parameters()) params.push_back(p);
  Optimizer optimizer("sgd", smoke_groups(model, setup.lr));
  auto noise_generator = at::detail::createCPUGenerator(seed + 1000003);
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
    if (noise > 0) {
      torch::NoGradGuard no_grad;
      for (auto& p : params) {
        // host: drawn on the CPU from the private generator, then moved to the parameter's device
        const auto draw = torch::randn(p.sizes(), noise_generator, torch::TensorOptions().dtype(torch::kFloat64));
        p.mul_((1 + noise * draw).to(p.device(), p.scalar_type()));
      }
    }
    if (after_step) after_step();
  }
  return losses;
}

}  // namespace

nlohmann::json smoke_encoder(const std::string& name) {
  const auto& kind = require_encoder_kind(name);
  auto config = kind.smoke.options;
  config["encoder"] = kind.kind;
  return config;
}

std::vector<SmokeSetup> default_smoke_setups() {
  std::vector<SmokeSetup> setups;
  const auto& default_encoder = require_encoder_kind(kDefaultEncoderKind);
  for (const auto* kind : registered_head_kinds()) {
    nlohmann::json head{{"kind", kind->kind}};
    for (const auto& option : kind->options) {
      if (option.name == "dropoutl") head["dropoutl"] = 0.0;     // no random masks
      if (option.name == "K" && kind->capabilities.mixture) head["K"] = 3;  // components
    }
    if (kind->kind == "relu") {
      // log(relu(l) + ε): with the default ε = 1e-8 a logit crossing 0 by a rounding error changes
      // its gradient from 0 to 1/ε; ε = 0.1 bounds the kink's jump.
      head["eps"] = 0.1;
    }
    if (kind->kind == "plif") {
      // Knots 0.4 apart and slopes near 1 (σ = 0.01): a rounding error moves a gradient by
      // rounding errors, not by a slope's jump (see the header).
      head["K"] = 100;
      head["sigma"] = 0.01;
    }
    setups.push_back({kind->kind, head, smoke_encoder(default_encoder.kind), default_encoder.smoke.lr});
  }
  for (const auto* kind : registered_encoder_kinds()) {
    if (kind == &default_encoder) continue;
    setups.push_back({kind->kind + "+softmax", {{"kind", "softmax"}}, smoke_encoder(kind->kind), kind->smoke.lr});
  }
  return setups;
}

std::vector<SmokeTestResult> device_smoke_test(const torch::Device& device, const SmokeTestOptions& options) {
  const auto setups = options.setups.empty() ? default_smoke_setups() : options.setups;
  data::SyntheticOptions language_options;
  language_options.vocab = kVocab;
  language_options.seed = options.seed;
  const auto tokens = data::SyntheticLanguage(language_options).generate(kBatch * (kBptt * 8 + 1), options.seed);
  const auto source = data::batchify(tokens, kBatch);
  std::vector<SmokeTestResult> results;
  const std::int64_t total = static_cast<std::int64_t>(setups.size()) * options.steps * 2;
  std::int64_t done = 0;
  const std::function<void()> after_step = [&] {
    ++done;
    if (options.on_step) options.on_step(done, total);
  };
  for (const auto& setup : setups) {
    SmokeTestResult r;
    r.head = setup.name;
    const auto start = std::chrono::steady_clock::now();
    try {
      r.cpu_losses =
          train_losses(quiet_model(setup, options.seed), setup, source, options.steps, 0, options.seed, after_step);
      auto model = quiet_model(setup, options.seed);
      model->to(device);
      // TF32 (cuDNN's LSTM and cuBLAS on Ampere and later, on by default for cuDNN) rounds to 10
      // bits of mantissa: the comparison is of float32 against float32.
      auto& context = at::globalContext();
      const bool tf32_cudnn = context.allowTF32CuDNN(), tf32_cublas = context.allowTF32CuBLAS();
      context.setAllowTF32CuDNN(false);
      context.setAllowTF32CuBLAS(false);
      try {
        r.device_losses =
            train_losses(model, setup, source.to(device), options.steps, options.parameter_noise, options.seed, after_step);
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
        const double difference = std::abs(r.device_losses[i] - r.cpu_losses[i]);
        if (!(difference <= options.tolerance) && r.first_exceeding_step < 0) {
          r.first_exceeding_step = static_cast<std::int64_t>(i) + 1;
        }
        r.max_difference = std::max(r.max_difference, difference);
      }
      r.passed = finite && r.max_difference <= options.tolerance;
      if (!finite) r.failure = "a loss is not finite";
    } catch (...) {
      r.failure = describe_exception(std::current_exception());  // Torch's text without its C++ backtrace
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // A setup that failed part-way still counts its steps as done, so the progress reaches the end.
    done = std::max(done, static_cast<std::int64_t>(results.size() + 1) * options.steps * 2);
    if (options.on_result) options.on_result(r);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace lmkit::training
