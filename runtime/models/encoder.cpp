#include "runtime/models/encoder.h"

#include <stdexcept>

#include "runtime/core/error.h"
#include "runtime/models/encoder_registry.h"

namespace lmkit {

EncoderRegularizers EncoderImpl::regularizers(const EncoderOutput& out) const {
  const auto zero = torch::zeros({}, out.output.options());
  return {zero, zero};
}

nlohmann::json EncoderImpl::training_defaults(const nlohmann::json& /*given*/) const { return nlohmann::json::object(); }

std::vector<std::pair<std::string, torch::Tensor>> EncoderImpl::reference_entries(bool /*weight_drop*/) const {
  const auto* registered = find_encoder_kind(kind());
  throw UsageError("export: the reference code's structures are AWD-LSTMs; this model's encoder is " +
                   (registered ? registered->title_in_text() : kind()) + " (m:save or lmkit.write_tensors keep its weights)");
}

const EncoderCapabilities& EncoderImpl::capabilities() const {
  const auto* registered = find_encoder_kind(kind());
  if (registered == nullptr) throw std::logic_error("encoder kind '" + kind() + "' is not registered");
  return registered->capabilities;
}

EncoderState detach_state(const EncoderState& state) {
  EncoderState out;
  for (const auto& part : state) {
    std::vector<torch::Tensor> detached;
    for (const auto& t : part) detached.push_back(t.defined() ? t.detach() : t);
    out.push_back(std::move(detached));
  }
  return out;
}

}  // namespace lmkit
