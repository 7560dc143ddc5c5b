// The optimizers of the AWD-LSTM protocol, written out so that their state is explicit (for exact
// resume) and their semantics are those of the reference code (PyTorch 0.4–1.x), not a guess.
//
// Parameter groups: each has its own learning rate (LMS-PLIF's slopes train with their own) and
// weight decay; gradients are L2-coupled as in torch.optim (g ← g + wd·p). Parameters without a
// gradient (frozen, or unused in this step) are skipped, as torch.optim skips p.grad = None.
//
//   "sgd":  p ← p − lr·g                                                   (no momentum)
//   "asgd": torch.optim.ASGD with t0 = 0, λ = 0, α = 0.75 — plain SGD steps with a step size η
//           plus a running average ax of the iterates. Per parameter, at its k-th step:
//             p ← p − (η_k·g);   ax ← p if μ_k = 1 else ax + μ_k·(p − ax)
//             η_{k+1} = lr (the group's lr at that moment);   μ_{k+1} = 1 / max(1, k)
//           with η_1 = lr at the first step and μ_1 = 1. Two reference quirks follow and are kept:
//           μ is 1 for the first two steps, so ax after k steps is the mean of the iterates
//           p_2..p_k (the first is overwritten); and η lags the lr by one step, so the trainer's
//           per-batch lr scaling (seq_len/bptt) acts one batch late while averaging. The product
//           η·g is rounded before the difference (two kernels, never contracted into one fused
//           multiply-add as p + (−η)·g may be), and ax ← p is a selection: so η and μ may come from
//           the host or from tensors on the device with the same bits (keep_scalars_on_device).
//   "adam": torch.optim.Adam (β = (0.9, 0.999), ε = 1e−8, no amsgrad), bias-corrected.
//   "adamw": torch.optim.AdamW (Loshchilov & Hutter 2019): Adam without the L2 coupling, and the
//           decay applied to the weights themselves first: p ← p·(1 − lr·wd), then the Adam step.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/torch.h"

namespace lmkit::training {

struct ParameterGroup {
  std::string name;  // "main", "plif_slopes", ...
  std::vector<torch::Tensor> params;
  double lr = 1.0;
  double weight_decay = 0.0;
};

class Optimizer {
 public:
  // kind: "sgd", "asgd", "adam" or "adamw"; throws UsageError otherwise.
  Optimizer(std::string kind, std::vector<ParameterGroup> groups);

  void zero_grad();
  void step();
  // The step, taken only where `proceed` (a bool scalar on the parameters' device) is true —
  // decided on the device, without a read to the host: where it is false, every parameter, ASGD
  // average and Adam moment keeps its bits (a NaN gradient never reaches them: it is masked, not
  // multiplied by 0), and only the host's step counters move on (the run stops there anyway).
  // Where it is true, the same arithmetic as step(), bit for bit. Gradients may be overwritten.
  void step(const torch::Tensor& proceed);

  // The numbers the host keeps per parameter (its step count; ASGD's η and μ), and a step whose
  // device work ran without this object's host code — a replayed CUDA graph (step_graphs.h):
  // every parameter with a gradient counts one step and moves its η and μ on, as step() does.
  struct SlotScalars {
    std::int64_t step = 0;
    double eta = 0, mu = 1;
  };
  using HostScalars = std::vector<std::vector<SlotScalars>>;
  HostScalars host_scalars() const;
  void set_host_scalars(const HostScalars& scalars);
  void count_replayed_step();

  // ASGD's η, μ and step count kept on the device as well, and the step reading them there, so
  // that a captured step (a CUDA graph) reads each replay's own values instead of the capture's.
  // The same bits as the host's: η·g and μ·(p − ax) take the float32 rounding of the same double,
  // and ax ← p where μ = 1 is a selection. Stays on for this optimizer; no-op for other kinds.
  void keep_scalars_on_device();
  bool scalars_on_device() const { return scalars_on_device_; }
  // Whether every parameter that may step has stepped before: a first step makes its state
  // (ASGD's average, Adam's moments, the device scalars), which a captured step must not do. A
  // parameter may step when it has a gradient, or when it trains (requires_grad: unfrozen, say) and
  // this optimizer's last step has not shown it unused (a step that left it without a gradient).
  bool every_stepping_slot_started() const;

  // Different for every optimizer made in this process (a pointer may be reused), and new after
  // load_state (its state tensors are others).
  std::uint64_t id() const { return id_; }

  const std::string& kind() const { return kind_; }
  bool averages() const { return kind_ == "asgd"; }
  std::vector<ParameterGroup>& groups() { return groups_; }
  const std::vector<ParameterGroup>& groups() const { return groups_; }

  // ASGD: swaps every parameter's values with its average (ax) in place; calling it again swaps
  // back. Parameters never stepped keep their values (their average is themselves).
  void swap_with_average();
  // ASGD: the average of a parameter (the parameter itself before its first step).
  torch::Tensor average_of(std::size_t group, std::size_t index) const;

  // The full state: scalars as JSON, tensors by name ("<group>.<index>.<slot>").
  nlohmann::json state_json() const;
  std::map<std::string, torch::Tensor> state_tensors() const;
  // Restores what state_json/state_tensors produced for the same groups; UsageError on mismatch.
  void load_state(const nlohmann::json& scalars, const std::map<std::string, torch::Tensor>& tensors);

 private:
  struct SlotState {
    std::int64_t step = 0;
    // Trainable, yet the last step left it without a gradient (a parameter the loss does not use).
    bool unused = false;
    double eta = 0;  // ASGD
    double mu = 1;   // ASGD
    torch::Tensor ax, exp_avg, exp_avg_sq;
    // ASGD on the device (keep_scalars_on_device): float64 scalars as they stand before a step —
    // its η and μ, and the steps taken so far.
    torch::Tensor eta_on_device, mu_on_device, steps_on_device;
  };
  void step_gated(const torch::Tensor* proceed);
  void asgd_update(SlotState& s, torch::Tensor& p, const torch::Tensor& grad, double lr, const torch::Tensor* proceed);
  // The device scalars of a slot from its host numbers, `steps_before` steps taken.
  static void put_scalars_on_device(SlotState& s, const torch::Tensor& p, std::int64_t steps_before);

  std::string kind_;
  std::vector<ParameterGroup> groups_;
  std::vector<std::vector<SlotState>> state_;
  bool scalars_on_device_ = false;
  std::uint64_t id_;
};

}  // namespace lmkit::training
