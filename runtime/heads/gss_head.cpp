#include "runtime/heads/gss_head.h"
#include "ops/gss_log_softmax.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

torch::Tensor gss_transform(const torch::Tensor& l, double c, double k) {
  return (l - c) * k + c - torch::softplus(l - c) * (k - 1);
}

GssHeadImpl::GssHeadImpl(GssHeadOptions o) : options(o) {}

nlohmann::json GssHeadImpl::config() const { return declared_head_config(kind(), options); }

torch::Tensor GssHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  return ops::gss_log_softmax(decoder.logits(rows_of(h)), options.c(), options.k());
}

torch::Tensor GssHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  return gss_transform(decoder.logits(rows_of(h)), options.c(), options.k());
}

const config::BoundOptions<GssHeadOptions>& declared_options(config::Tag<GssHeadOptions>) {
  static const config::BoundOptions<GssHeadOptions> options(
      "gss", {LMKIT_BOUND_ACCESSOR(GssHeadOptions, c, Number, double, any(), "the knee: logits above c pass unchanged"),
              LMKIT_BOUND_ACCESSOR(GssHeadOptions, k, Number, double, positive(), "the slope below c")});
  return options;
}

LMKIT_REGISTER_HEAD(gss) {
  return declared_head_kind<GssHeadImpl, GssHeadOptions>(
      "gss",
      "Generalized SigSoftmax: log_softmax(k(l−c) + c − (k−1)·softplus(l−c)); GSS(0,2) = SigSoftmax, GSS(c,1) = Softmax.",
      HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true}, {{{"c", -0.5}, {"k", 2.5}}});
}

}  // namespace lmkit
