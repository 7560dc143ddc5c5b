// Heads whose computation a script gives as functions (lmkit.heads.pointwise and .custom in Lua):
// the functions are called as they are; everything they return is checked where it enters lmkit
// (shape, dtype, normalization, a custom nll against its own forward on the first batch), so that
// the scripting layer only translates values.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "runtime/heads/head.h"

namespace lmkit {

// log_softmax(f(l)) for a function f of the logits [M, N] returning the same shape.
class PointwiseHeadImpl : public HeadImpl {
 public:
  using Function = std::function<torch::Tensor(const torch::Tensor& logits)>;
  explicit PointwiseHeadImpl(Function f) : f_(std::move(f)) {}
  std::string kind() const override { return "pointwise"; }
  nlohmann::json config() const override { return {{"kind", kind()}}; }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;

 private:
  Function f_;
};

// A head given whole: forward(h [M, d], weight [N, d], bias [N] or undefined) → log-probs [M, N];
// optionally nll(h, targets [M], weight, bias) → [M], compared with forward on the first batch unless
// `check` is off; `parameters` (leaves that require grad) become the head's.
struct CustomHeadFunctions {
  std::function<torch::Tensor(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& bias)> forward;
  std::function<torch::Tensor(const torch::Tensor& h, const torch::Tensor& targets, const torch::Tensor& weight,
                              const torch::Tensor& bias)>
      nll;  // empty: the nll of forward's log-probs
  std::vector<torch::Tensor> parameters;
  std::string name = "custom";
  bool check = true;
};

class CustomHeadImpl : public HeadImpl {
 public:
  explicit CustomHeadImpl(CustomHeadFunctions functions);
  std::string kind() const override { return "custom"; }
  nlohmann::json config() const override { return {{"kind", kind()}, {"name", functions_.name}}; }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) override;

 private:
  CustomHeadFunctions functions_;
  bool check_nll_;  // until the first nll has been compared with forward (or check was off)
  std::int64_t calls_ = 0;  // forward's calls so far: the first checks every row's normalization, later ones a sample
};

}  // namespace lmkit
