// Checkpoints of the reference code, in and out: a state_dict saved from Merity et al.'s awd-lstm-lm
// ("awd-lstm"), Yang et al.'s MoS code ("mos") or the thesis's code (quettabit/awd-lstm-lmkit,
// "thesis") becomes an lmkit model, and an lmkit model becomes an awd-lstm or mos state_dict
// (torch.load + load_state_dict read it into the reference structure).
//
//   reference name                         lmkit parameter
//   encoder.weight            [N, emb]     encoder.embedding
//   rnns.L.module.weight_ih_l0 [4h, in]    encoder.lstmL_w_ih      (".module." and "_raw": WeightDrop)
//   rnns.L.module.weight_hh_l0_raw [4h, h] encoder.lstmL_w_hh
//   rnns.L.module.bias_ih_l0 / bias_hh_l0  encoder.lstmL_b_ih / encoder.lstmL_b_hh
//   decoder.weight            [N, d]       tied (equal to encoder.weight) or decoder_weight
//   decoder.bias              [N]          decoder_bias
//   prior.weight              [K, nhidlast]      head.prior.weight     (mos)
//   latent.0.weight / .bias   [K·emb, nhidlast]  head.latent.weight / head.latent.bias
//
// nn.LSTM and lmkit's layers (at::lstm) share the gate order (i, f, g, o): no reordering. Sizes are
// read from the shapes (vocabulary, emb, nhid, nhidlast, layers, K). A WeightDrop model that ran a
// forward in evaluation mode also stores `weight_hh_l0` (the raw weight, or a dropped copy after a
// training forward) beside `weight_hh_l0_raw`: the raw one is the model's weight, the other is
// ignored. A state_dict saved from nn.DataParallel ("module." before every name) is read too.
//
// The thesis's code keeps the same names under two prefixes: `base_model.` (encoder.weight, rnns.L…)
// and `top_model.` (decoder.weight/bias, and per top model plif_w [K] or prior/latent.0). Its top
// models (--top_model) become lmkit heads: smax → softmax, gs_smax → gss(c, k), s_smax → sigsoftmax,
// adv_smax → advsoft(eps = alpha, relative, aligned_only), plif_smax → plif(K, T; v = plif_w),
// mos → mos, moc → moc. A state_dict does not hold c, k, T or alpha (options below; nil: the thesis
// code's defaults), nor whether prior/latent layers mix softmaxes or contexts (top_model says).
//
// The MoS code takes log(p + 1e-8) of the mixture probability p; lmkit computes log p exactly
// (logsumexp over the components): the two differ by log(1 + 1e-8/p), under 1e-5 where p > 1e-3,
// 0.69 nats at p = 1e-8, and without bound as p falls (over 85 nats where the MoS code's float32 p
// underflows to 0 and it takes log 1e-8 = −18.4). `floor = 1e-8` imports the MoS code's computation (the
// MoS head's floor option). The thesis's MoS takes log p without a floor.
#pragma once
#include <optional>
#include <string>

#include "runtime/config/bound_options.h"
#include "runtime/models/language_model.h"

namespace lmkit {

struct ImportCheckpointOptions {
  std::string format;  // "awd-lstm", "mos" or "thesis"
  // Dropout rates of the imported model (its weights do not record them): by default SPEC Table
  // 4.3's PTB column of the format's family. They matter only when the model is trained further.
  std::optional<double> dropout, dropouth, dropouti, dropoute, wdrop, dropoutl;
  // A mixture head's floor: log(p + floor) (the MoS code's 1e-8); nil: 0, log p exactly.
  std::optional<double> floor;
  // format "thesis": the code's --top_model (nil: plif_smax where the file has plif_w, smax where it
  // has no head layers; a file with prior/latent layers must say mos or moc), and the settings of
  // its head that the file does not hold (nil: that code's defaults).
  std::optional<std::string> top_model;
  std::optional<double> gs_smax_c, gs_smax_k, plif_smax_t, adv_smax_alpha;
};
const config::BoundOptions<ImportCheckpointOptions>& declared_options(config::Tag<ImportCheckpointOptions>);

struct ExportCheckpointOptions {
  std::string format;       // "awd-lstm" or "mos"
  bool weight_drop = true;  // names of a WeightDrop model (".module.", "weight_hh_l0_raw"); false: a plain nn.LSTM's
  std::optional<std::string> file_format;  // lmkit.write_tensors' formats; nil: from the extension (.pt: torch.save)
};
const config::BoundOptions<ExportCheckpointOptions>& declared_options(config::Tag<ExportCheckpointOptions>);

// The model of a reference state_dict (any file lmkit.read_tensors reads: torch.save of the
// state_dict or of the whole model, safetensors, .npz), in evaluation mode, float32 (float64 when
// every weight in the file is float64). A missing, unexpected or misshapen entry is an
// EnvironmentError naming the file, the entry and the shape expected.
LanguageModel import_reference_checkpoint(const std::string& path, const ImportCheckpointOptions& options);

// Writes the model's weights under the reference names, atomically. "awd-lstm" takes a softmax
// head, "mos" a MoS head (other heads compute something the reference structure does not); a model
// without a decoder bias is written with a zero one (nn.Linear always has one).
void export_reference_checkpoint(const LanguageModel& model, const std::string& path, const ExportCheckpointOptions& options);

}  // namespace lmkit
