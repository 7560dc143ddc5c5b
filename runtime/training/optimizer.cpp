#include "runtime/training/optimizer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::training {

namespace {
std::atomic<std::uint64_t> optimizers_made{0};
}  // namespace

Optimizer::Optimizer(std::string kind, std::vector<ParameterGroup> groups)
    : kind_(std::move(kind)), groups_(std::move(groups)), id_(++optimizers_made) {
  if (kind_ != "sgd" && kind_ != "asgd" && kind_ != "adam" && kind_ != "adamw") {
    throw UsageError("optimizer: unknown kind '" + kind_ + "' (use \"sgd\", \"asgd\", \"adam\" or \"adamw\")");
  }
  for (const auto& g : groups_) state_.emplace_back(g.params.size());
}

void Optimizer::zero_grad() {
  for (auto& g : groups_) {
    for (auto& p : g.params) {
      if (p.grad().defined()) {
        p.mutable_grad().detach_();
        p.mutable_grad().zero_();
      }
    }
  }
}

void Optimizer::step() { step_gated(nullptr); }

void Optimizer::step(const torch::Tensor& proceed) {
  if (!proceed.defined() || proceed.numel() != 1 || proceed.scalar_type() != torch::kBool) {
    throw UsageError("optimizer: a gated step needs a bool scalar tensor saying whether to proceed");
  }
  step_gated(&proceed);
}

namespace {

// A float64 scalar on the device: `a` where the step proceeds, `b` where it does not (a, b finite):
// a·1 + b·0 and a·0 + b·1 are a and b exactly. Scalars reach the kernels as arguments, never as a
// copy from the host (which would wait for the device).
torch::Tensor select_scalar(const torch::Tensor& proceed, double a, double b) {
  const auto go = proceed.to(torch::kFloat64);
  return go.mul(a).add_(go.mul(-1.0).add_(1.0).mul_(b));
}

}  // namespace

void Optimizer::step_gated(const torch::Tensor* proceed) {
  torch::NoGradGuard no_grad;
  const torch::Tensor halt = proceed != nullptr ? proceed->eq(false) : torch::Tensor();
  // Adam's β as device scalars, one per value in this step.
  std::map<std::pair<double, double>, torch::Tensor> selected;
  auto scalar = [&](double value, double when_halted) -> torch::Tensor {
    auto& t = selected[{value, when_halted}];
    if (!t.defined()) t = select_scalar(*proceed, value, when_halted);
    return t;
  };
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    auto& group = groups_[gi];
    // SGD's updates of a group: on a GPU one multi-tensor op (one launch), elsewhere p.add_(g, −lr)
    // per tensor (what the multi-tensor op's fallback does too).
    std::vector<torch::Tensor> sgd_params, sgd_grads;
    for (std::size_t pi = 0; pi < group.params.size(); ++pi) {
      auto& p = group.params[pi];
      auto& s = state_[gi][pi];
      s.unused = !p.grad().defined() && p.requires_grad();
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      const bool decoupled = kind_ == "adamw";
      if (group.weight_decay != 0 && !decoupled) grad = grad.add(p, group.weight_decay);
      // Halted: the gradient is 0 (in place: it is this step's, or the coupled temporary), so that
      // p − lr·0 = p exactly; a NaN or ∞ in it is replaced, not multiplied.
      if (proceed != nullptr) grad.masked_fill_(halt, 0);
      if (group.weight_decay != 0 && decoupled) {
        const double factor = 1 - group.lr * group.weight_decay;
        if (proceed != nullptr) {
          p.mul_(select_scalar(*proceed, factor, 1.0));
        } else {
          p.mul_(factor);
        }
      }
      ++s.step;
      if (kind_ == "sgd") {
        sgd_params.push_back(p);
        sgd_grads.push_back(grad);
      } else if (kind_ == "asgd") {
        asgd_update(s, p, grad, group.lr, proceed);
      } else {  // adam, adamw
        constexpr double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
        if (s.step == 1) {
          s.exp_avg = torch::zeros_like(p);
          s.exp_avg_sq = torch::zeros_like(p);
        }
        if (proceed != nullptr) {
          // Halted: β = 1 and a zero gradient keep both moments; an infinite denominator keeps p.
          s.exp_avg.mul_(scalar(beta1, 1.0)).add_(grad, 1 - beta1);
          s.exp_avg_sq.mul_(scalar(beta2, 1.0)).addcmul_(grad, grad, 1 - beta2);
        } else {
          s.exp_avg.mul_(beta1).add_(grad, 1 - beta1);
          s.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
        }
        const double bias1 = 1 - std::pow(beta1, static_cast<double>(s.step));
        const double bias2 = 1 - std::pow(beta2, static_cast<double>(s.step));
        auto denom = s.exp_avg_sq.sqrt().div_(std::sqrt(bias2)).add_(eps);
        if (proceed != nullptr) denom.masked_fill_(halt, std::numeric_limits<double>::infinity());
        p.addcdiv_(s.exp_avg, denom, -group.lr / bias1);
      }
    }
    if (!sgd_params.empty() && sgd_params.front().is_cuda()) {
      at::_foreach_add_(sgd_params, sgd_grads, -group.lr);
    } else {
      for (std::size_t i = 0; i < sgd_params.size(); ++i) sgd_params[i].add_(sgd_grads[i], -group.lr);
    }
  }
}

void Optimizer::asgd_update(SlotState& s, torch::Tensor& p, const torch::Tensor& grad, double lr,
                            const torch::Tensor* proceed) {
  if (s.step == 1) {
    s.eta = lr;
    s.mu = 1;
    s.ax = torch::zeros_like(p);
  }
  if (scalars_on_device_ && !s.eta_on_device.defined()) put_scalars_on_device(s, p, s.step - 1);
  if (scalars_on_device_) {
    // What a captured step reads at each replay: η, μ and the count from the device, never a
    // number of the host's (it would be the capture's).
    p.sub_(grad.mul(s.eta_on_device));
    auto next = torch::where(s.mu_on_device.eq(1), p, s.ax.add(p.sub(s.ax).mul(s.mu_on_device)));
    if (proceed != nullptr) next = torch::where(*proceed, next, s.ax);
    s.ax.copy_(next);
    s.eta_on_device.fill_(lr);  // this step's rate: fixed for a graph's shape
    s.steps_on_device.add_(1);
    s.mu_on_device.copy_(s.steps_on_device.clamp_min(1).reciprocal());
  } else {
    p.sub_(grad.mul(s.eta));
    if (proceed != nullptr) {
      // The device path's selections with the host's μ (the same bits, the sign of a zero too).
      auto next = s.mu != 1 ? s.ax.add(p.sub(s.ax).mul(s.mu)) : p;
      s.ax.copy_(torch::where(*proceed, next, s.ax));
    } else if (s.mu != 1) {
      s.ax.add_(p.sub(s.ax).mul(s.mu));
    } else {
      s.ax.copy_(p);
    }
  }
  s.eta = lr;  // lr / (1 + λ·lr·step)^α with λ = 0
  s.mu = 1.0 / static_cast<double>(std::max<std::int64_t>(1, s.step));
}

void Optimizer::put_scalars_on_device(SlotState& s, const torch::Tensor& p, std::int64_t steps_before) {
  // Fills with a number as the kernel's argument: nothing waits for the device.
  const auto options = p.options().dtype(torch::kFloat64);
  s.eta_on_device = torch::full({}, s.eta, options);
  s.mu_on_device = torch::full({}, s.mu, options);
  s.steps_on_device = torch::full({}, static_cast<double>(steps_before), options);
}

bool Optimizer::every_stepping_slot_started() const {
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      const auto& p = groups_[gi].params[pi];
      const auto& s = state_[gi][pi];
      if (s.step > 0) continue;
      if (p.grad().defined() || (p.requires_grad() && !s.unused)) return false;
    }
  }
  return true;
}

void Optimizer::keep_scalars_on_device() {
  if (kind_ != "asgd" || scalars_on_device_) return;
  scalars_on_device_ = true;
  // Now, before any capture: a slot not yet stepped gets its scalars at its first step.
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      auto& s = state_[gi][pi];
      if (s.step > 0) put_scalars_on_device(s, groups_[gi].params[pi], s.step);
    }
  }
}

Optimizer::HostScalars Optimizer::host_scalars() const {
  HostScalars out;
  for (const auto& group : state_) {
    out.emplace_back();
    for (const auto& s : group) out.back().push_back({s.step, s.eta, s.mu});
  }
  return out;
}

void Optimizer::set_host_scalars(const HostScalars& scalars) {
  if (scalars.size() != state_.size()) throw std::logic_error("Optimizer::set_host_scalars: other groups");
  for (std::size_t gi = 0; gi < state_.size(); ++gi) {
    if (scalars[gi].size() != state_[gi].size()) throw std::logic_error("Optimizer::set_host_scalars: other groups");
    for (std::size_t pi = 0; pi < state_[gi].size(); ++pi) {
      auto& s = state_[gi][pi];
      s.step = scalars[gi][pi].step;
      s.eta = scalars[gi][pi].eta;
      s.mu = scalars[gi][pi].mu;
    }
  }
}

void Optimizer::count_replayed_step() {
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      if (!groups_[gi].params[pi].grad().defined()) continue;
      auto& s = state_[gi][pi];
      ++s.step;
      if (kind_ == "asgd") {
        s.eta = groups_[gi].lr;
        s.mu = 1.0 / static_cast<double>(std::max<std::int64_t>(1, s.step));
      }
    }
  }
}

void Optimizer::swap_with_average() {
  if (!averages()) throw UsageError("optimizer: only \"asgd\" keeps an average to swap in");
  torch::NoGradGuard no_grad;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    for (std::size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      auto& s = state_[gi][pi];
      if (!s.ax.defined()) continue;
      auto& p = groups_[gi].params[pi];
      auto kept = p.clone();
      p.copy_(s.ax);
      s.ax.copy_(kept);
    }
  }
}

torch::Tensor Optimizer::average_of(std::size_t group, std::size_t index) const {
  const auto& s = state_.at(group).at(index);
  return s.ax.defined() ? s.ax : groups_.at(group).params.at(index);
}

namespace {
std::string slot_key(std::size_t g, std::size_t p, const char* slot) {
  return integer_text(g) + "." + integer_text(p) + "." + slot;
}
}  // namespace

nlohmann::json Optimizer::state_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    nlohmann::json slots = nlohmann::json::array();
    for (const auto& s : state_[gi]) slots.push_back({{"step", s.step}, {"eta", s.eta}, {"mu", s.mu}});
    groups.push_back({{"name", groups_[gi].name},
                      {"lr", groups_[gi].lr},
                      {"weight_decay", groups_[gi].weight_decay},
                      {"size", groups_[gi].params.size()},
                      {"slots", slots}});
  }
  return {{"kind", kind_}, {"groups", groups}};
}

std::map<std::string, torch::Tensor> Optimizer::state_tensors() const {
  std::map<std::string, torch::Tensor> out;
  for (std::size_t gi = 0; gi < state_.size(); ++gi) {
    for (std::size_t pi = 0; pi < state_[gi].size(); ++pi) {
      const auto& s = state_[gi][pi];
      if (s.ax.defined()) out[slot_key(gi, pi, "ax")] = s.ax;
      if (s.exp_avg.defined()) out[slot_key(gi, pi, "exp_avg")] = s.exp_avg;
      if (s.exp_avg_sq.defined()) out[slot_key(gi, pi, "exp_avg_sq")] = s.exp_avg_sq;
    }
  }
  return out;
}

void Optimizer::load_state(const nlohmann::json& scalars, const std::map<std::string, torch::Tensor>& tensors) {
  const auto kind = scalars.at("kind").get<std::string>();
  if (kind != kind_) throw UsageError("optimizer state is for '" + kind + "', this optimizer is '" + kind_ + "'");
  const auto& groups = scalars.at("groups");
  if (groups.size() != groups_.size()) throw UsageError("optimizer state has a different number of parameter groups");
  // Its state tensors are new: graphs captured with the old ones are not this optimizer's any more.
  id_ = ++optimizers_made;
  torch::NoGradGuard no_grad;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& g = groups[gi];
    if (g.at("size").get<std::size_t>() != groups_[gi].params.size()) {
      throw UsageError("optimizer state: group '" + groups_[gi].name + "' has a different number of parameters");
    }
    groups_[gi].lr = g.at("lr").get<double>();
    groups_[gi].weight_decay = g.at("weight_decay").get<double>();
    for (std::size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      auto& s = state_[gi][pi];
      const auto& slot = g.at("slots").at(pi);
      s.step = slot.at("step").get<std::int64_t>();
      s.eta = slot.at("eta").get<double>();
      s.mu = slot.at("mu").get<double>();
      auto take = [&](const char* name) -> torch::Tensor {
        const auto it = tensors.find(slot_key(gi, pi, name));
        return it == tensors.end() ? torch::Tensor() : it->second.to(groups_[gi].params[pi].device()).clone();
      };
      s.ax = take("ax");
      s.exp_avg = take("exp_avg");
      s.exp_avg_sq = take("exp_avg_sq");
      s.eta_on_device = s.mu_on_device = s.steps_on_device = torch::Tensor();
      if (scalars_on_device_ && s.step > 0) put_scalars_on_device(s, groups_[gi].params[pi], s.step);
    }
  }
}

}  // namespace lmkit::training
