#include "runtime/heads/sigmoid_head.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

torch::Tensor SigmoidHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return torch::log_sigmoid(decoder.logits(rows_of(h)));
}

torch::Tensor SigmoidHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  auto u = torch::log_sigmoid(decoder.logits(rows_of(h)));
  return u - torch::logsumexp(u, 1, true);
}


LMKIT_REGISTER_HEAD(sigmoid) {
  return {"sigmoid", "Sigmoid-based: log_sigmoid(l) − logsumexp(log_sigmoid(l)).", {},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings&) { return make_head_of<SigmoidHeadImpl>(); }};
}

}  // namespace lmkit
