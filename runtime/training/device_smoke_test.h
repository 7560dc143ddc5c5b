// A short training run on a device beside the same run on the CPU, from the same seed, without
// dropout (no random masks, whose generators differ by device) and without TF32: the losses must
// agree step by step (1e-4 by default). `lmkit doctor` runs it
// on a new machine; it exercises the encoder, the heads with lmkit's fused kernels (GSS, PLIF, MoS)
// and the step's pieces (backward, gradient norm and clipping, SGD) where they will run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/torch.h"

namespace lmkit::training {

struct SmokeTestResult {
  std::string head;                          // the head's kind
  std::vector<double> device_losses, cpu_losses;
  double max_difference = 0;                 // max |device − cpu| over the steps
  bool passed = false;                       // max_difference ≤ tolerance and every loss finite
  std::string failure;                       // why it could not run, if it could not
  double seconds = 0;
};

struct SmokeTestOptions {
  std::int64_t steps = 20;
  std::uint64_t seed = 1;
  double tolerance = 1e-4;
  // The heads to train (default: softmax, gss, plif, mos — one of each fused kernel).
  std::vector<nlohmann::json> heads;
};

std::vector<SmokeTestResult> device_smoke_test(const torch::Device& device, const SmokeTestOptions& options = {});

}  // namespace lmkit::training
