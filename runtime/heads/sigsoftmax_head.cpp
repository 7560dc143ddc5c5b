#include "runtime/heads/sigsoftmax_head.h"
#include "ops/gss_log_softmax.h"
#include "runtime/heads/gss_head.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

torch::Tensor SigSoftmaxHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return ops::gss_log_softmax(decoder.logits(rows_of(h)), 0.0, 2.0);
}

torch::Tensor SigSoftmaxHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return gss_transform(decoder.logits(rows_of(h)), 0.0, 2.0);
}

LMKIT_REGISTER_HEAD(sigsoftmax) {
  return {"sigsoftmax", "SigSoftmax: log_softmax(2l − softplus(l)) (fused op).", {},
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
          [](const HeadSettings&) { return make_head_of<SigSoftmaxHeadImpl>(); }};
}

}  // namespace lmkit
