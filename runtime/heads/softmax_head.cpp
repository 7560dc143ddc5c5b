#include "runtime/heads/softmax_head.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

torch::Tensor SoftmaxHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return torch::log_softmax(decoder.logits(rows_of(h)), 1);
}

torch::Tensor SoftmaxHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return decoder.logits(rows_of(h));
}

torch::Tensor SoftmaxHeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  auto l = decoder.logits(rows_of(h));
  return torch::logsumexp(l, 1) - l.gather(1, target_column(targets)).squeeze(1);
}


LMKIT_REGISTER_HEAD(softmax) {
  return {"softmax", "log_softmax(l), l = h·Eᵀ + b: the AWD-LSTM baseline.", {},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings&) { return make_head_of<SoftmaxHeadImpl>(); }};
}

}  // namespace lmkit
