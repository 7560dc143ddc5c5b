#include "runtime/heads/plif_head.h"

#include <cmath>

#include "ops/plif.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {

PlifHeadImpl::PlifHeadImpl(PlifHeadOptions o) : options(o) {
  // softplus(log(e − 1)) = 1: the slopes start at 1 plus noise.
  // host: a parameter made in the constructor; .to(device) moves the module with it
  auto init = torch::randn({o.K()}) * o.sigma() + std::log(std::exp(1.0) - 1.0);
  v = register_parameter("v", init, /*requires_grad=*/!o.freeze());
}

nlohmann::json PlifHeadImpl::config() const { return declared_head_config(kind(), options); }

torch::Tensor PlifHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  auto l = decoder.logits(rows_of(h));
  return torch::log_softmax(ops::plif(l, slopes().to(l.scalar_type()), options.T()), 1);
}

torch::Tensor PlifHeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  auto l = decoder.logits(rows_of(h));
  return ops::plif_nll(l, slopes().to(l.scalar_type()), targets.reshape({-1}), options.T());
}

torch::Tensor PlifHeadImpl::f_logits(const torch::Tensor& h, const Decoder& decoder) {
  auto l = decoder.logits(rows_of(h));
  const auto s = slopes().to(l.scalar_type());
  auto f = ops::plif(l, s, options.T());
  return options.authors_offset() ? f + options.T() * s[0] : f;
}

std::vector<torch::Tensor> PlifHeadImpl::own_lr_parameters() {
  if (options.freeze()) return {};
  return {v};
}


const config::BoundOptions<PlifHeadOptions>& declared_options(config::Tag<PlifHeadOptions>) {
  using O = PlifHeadOptions;
  static const config::BoundOptions<O> options(
      "plif", {LMKIT_BOUND_ACCESSOR(O, K, Integer, int64_t, at_least(1), "the number of linear pieces"),
               LMKIT_BOUND_ACCESSOR(O, T, Number, double, positive(), "f is piecewise linear on [−T, T], linear outside"),
               LMKIT_BOUND_ACCESSOR(O, sigma, Number, double, non_negative(), "spread of the initial slopes' v"),
               LMKIT_BOUND_ACCESSOR(O, freeze, Boolean, bool, any(), "keep the slopes at their initial values"),
               LMKIT_BOUND_ACCESSOR(O, lr, Number, double, positive(), "the slopes' own learning rate"),
               LMKIT_BOUND_ACCESSOR(O, authors_offset, Boolean, bool, any(), "f-logits shifted so that f(−T) = 0")});
  return options;
}

LMKIT_REGISTER_HEAD(plif) {
  return declared_head_kind<PlifHeadImpl, PlifHeadOptions>("plif",
          "LMS-PLIF: log_softmax(f(l)), f piecewise linear increasing on K equal intervals of [−T, T], slopes "
          "softplus(v), v ~ N(log(e−1), σ²) (σ = 1 as the authors' code). The slopes train at their own rate lr "
          "(thesis 0.02; lmkit.train's own_lr overrides). freeze=true keeps the slopes at their initial values "
          "(LMS-PLIF†). authors_offset=true gives f-logits with f(−T) = 0 as the authors' code (log-probabilities "
          "are the same).",
          HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true}, {{{"K", 50}, {"T", 5.0}, {"sigma", 0.3}}});
}

}  // namespace lmkit
