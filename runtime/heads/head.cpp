#include "runtime/heads/head.h"

namespace lmkit {

torch::Tensor HeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  return -log_probs(h, decoder).gather(1, target_column(targets)).squeeze(1);
}

torch::Tensor HeadImpl::f_logits(const torch::Tensor&, const Decoder&) { return {}; }

std::tuple<torch::Tensor, torch::Tensor> HeadImpl::top_k(const torch::Tensor& h, const Decoder& decoder, int64_t k) {
  auto result = log_probs(h, decoder).topk(k, 1);
  return {std::get<0>(result), std::get<1>(result)};
}

}  // namespace lmkit
