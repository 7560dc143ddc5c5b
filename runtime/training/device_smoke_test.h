// A short training run on a device beside the same run on the CPU, from the same seed, without
// dropout (no random masks, whose generators differ by device) and without TF32: the losses must
// agree step by step (1e-4 by default). `lmkit doctor` runs it on a new machine: every registered
// head on the default encoder (the AWD-LSTM), and every other registered encoder with Softmax, each
// in its kind's smoke configuration (EncoderKind::smoke), each with the step's pieces (backward,
// gradient norm and clipping, SGD at the main rate and the head's own rate) where they will run.
//
// A mismatch must mean a bug, not chaos: each setup is well conditioned, i.e. the same run under
// rounding-level noise (1e-6 relative on every parameter after each step, `parameter_noise`) stays
// within the tolerance on the CPU (tests/runtime/training/device_smoke_test_test.cpp). A realistic
// LMS-PLIF (K = 100,000 knots 4e-4 apart, σ = 1 slopes) is not: a logit that moves by a rounding
// error across a knot changes a gradient by ~1e-2, so such a run repeats bit for bit only on one
// device (docs/training.md, Reproducibility); its smoke setup has K = 100 and σ = 0.01.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/torch.h"

namespace lmkit::training {

// One model and rate to train: a head on a small encoder without random masks.
struct SmokeSetup {
  std::string name;            // "softmax", "plif", "transformer+softmax"
  nlohmann::json head;         // the head's config (dropouts off)
  // The encoder: {"encoder": kind, options...} (its smoke configuration; vocab_size is the test's).
  nlohmann::json encoder = nlohmann::json::object();
  double lr = 5.0;             // SGD's main rate; the head's own-rate parameters train at its own
};

// {"encoder": kind, its smoke options}: the encoder of a kind's smoke setups.
nlohmann::json smoke_encoder(const std::string& kind);

// Every registered head kind on the default encoder (its defaults, dropouts off, PLIF conditioned
// as above), then every other registered encoder with Softmax.
std::vector<SmokeSetup> default_smoke_setups();

struct SmokeTestResult {
  std::string head;                          // the setup's name
  std::vector<double> device_losses, cpu_losses;
  double max_difference = 0;                 // max |device − cpu| over the steps
  std::int64_t first_exceeding_step = -1;    // 1-based step where |Δloss| first exceeds the tolerance
  bool passed = false;                       // max_difference ≤ tolerance and every loss finite
  std::string failure;                       // why it could not run, if it could not
  double seconds = 0;
};

struct SmokeTestOptions {
  std::int64_t steps = 20;
  std::uint64_t seed = 1;
  double tolerance = 1e-4;
  // The setups to train (empty: default_smoke_setups()).
  std::vector<SmokeSetup> setups;
  // After each step of the run on `device`, every parameter p ← p·(1 + noise·N(0, 1)) from a
  // generator of its own: rounding-level perturbations, to show that a setup is well conditioned.
  double parameter_noise = 0;
  // Called after every training step of either run (done, total over all setups and both runs),
  // and with each setup's result as soon as it has one: what a long check shows as it goes.
  std::function<void(std::int64_t, std::int64_t)> on_step;
  std::function<void(const SmokeTestResult&)> on_result;
};

std::vector<SmokeTestResult> device_smoke_test(const torch::Device& device, const SmokeTestOptions& options = {});

}  // namespace lmkit::training
