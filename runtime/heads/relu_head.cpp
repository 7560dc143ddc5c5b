#include "runtime/heads/relu_head.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

ReluHeadImpl::ReluHeadImpl(ReluHeadOptions o) : options(o) {}

nlohmann::json ReluHeadImpl::config() const { return declared_head_config(kind(), options); }

torch::Tensor ReluHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  auto u = torch::log(torch::relu(decoder.logits(rows_of(h))) + options.eps());
  return u - torch::logsumexp(u, 1, true);
}

torch::Tensor ReluHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return torch::log(torch::relu(decoder.logits(rows_of(h))) + options.eps());
}


const config::BoundOptions<ReluHeadOptions>& declared_options(config::Tag<ReluHeadOptions>) {
  static const config::BoundOptions<ReluHeadOptions> options(
      "relu", {LMKIT_BOUND_ACCESSOR(ReluHeadOptions, eps, Number, double, positive(), "ε, which keeps log away from log(0)")});
  return options;
}

LMKIT_REGISTER_HEAD(relu) {
  // relu(l) + ε is non-decreasing only: words with l ≤ 0 tie
  return declared_head_kind<ReluHeadImpl, ReluHeadOptions>("relu", "ReLU-based: log((relu(l)+ε) / Σ(relu(l)+ε)).",
                                                           HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/false});
}

}  // namespace lmkit
