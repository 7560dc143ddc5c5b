// lmkit.Model: every method a runtime entry point (runtime/models/model_steps.h) bound by one line;
// lmkit.model{...} reads its head from Lua (a spec table, or a head written in Lua).
#include "bindings/lua_model.h"

#include "bindings/entry_point.h"
#include "runtime/models/model_steps.h"
#include "runtime/models/reference_checkpoint.h"

namespace lmkit::lua {

std::string ClassTraits<LanguageModelImpl>::describe(const LanguageModelImpl& model) { return describe_model(model); }

namespace {

// lmkit.model{...}: the model's options through their declaration, the head from its spec.
int lmkit_model(lua_State* L) {
  if (lua_type(L, 1) != LUA_TTABLE) throw ArgError(1, "options table expected, e.g. lmkit.model{vocab_size = 10000}");
  const config::OptionSchema schema("model", language_model_option_specs());
  // The head is read from Lua below: it may hold functions.
  const auto table = entry_detail::read_options_table(L, 1, entry_detail::Where{1, ""}, schema, {"head"});
  if (!table.values.contains("vocab_size")) throw ArgError(1, "option 'vocab_size' is required");
  auto options = [&] {
    try {
      return language_model_options_from_json(table.values);
    } catch (const ConfigError& e) {
      throw ArgError(1, e.what());
    }
  }();
  Head head{nullptr};
  nlohmann::json head_config;
  if (get_field_raw(L, 1, "head") != LUA_TNIL) {
    head = head_from_spec(L, -1, encoder_output_width(options), embedding_width(options), head_config);
    options.head(head_config);
  }
  lua_pop(L, 1);
  entry_detail::push_one(L, LanguageModel(options, head));
  return 1;
}

// lmkit.load(path[, {head = spec}]): a checkpoint, or one whose head was written in Lua with that
// head given again (the runtime checks its parameters against the file).
int lmkit_load(lua_State* L) {
  const auto path = entry_detail::read<std::string>(L, 1, entry_detail::Where{1, "path"});
  if (lua_isnoneornil(L, 2)) {
    return entry_detail::push(L, load_model(path));
  }
  if (lua_type(L, 2) != LUA_TTABLE) throw ArgError(2, "options table expected, e.g. {head = myhead}");
  const config::OptionSchema schema("load", {});
  entry_detail::read_options_table(L, 2, entry_detail::Where{2, ""}, schema, {"head"});
  if (get_field_raw(L, 2, "head") == LUA_TNIL) throw ArgError(2, "option 'head' is the head the checkpoint was trained with");
  auto options = checkpoint_options_for_head(path);
  nlohmann::json head_config;
  Head head = head_from_spec(L, -1, encoder_output_width(options), embedding_width(options), head_config);
  lua_pop(L, 1);
  options.head(head_config);
  return entry_detail::push(L, load_into(LanguageModel(options, head), path));
}

const std::string& model_doc() {
  static const std::string doc = [] {
    const auto signature = language_model_signature();  // "{encoder="awd-lstm", vocab_size=10000, ...}"
    return "lmkit.model" + signature.substr(0, signature.size() - 1) + ", head=lmkit.heads.softmax()} -> Model\n"
           "A language model — an encoder (each with its options below) with the given output head (see "
           "docs/models.md); vocab_size is required.\n" +
           language_model_options_text();
  }();
  return doc;
}

}  // namespace

void open_model(lua_State* L, int module_index) {
  module_index = lua_absindex(L, module_index);
  static const std::vector<Function> methods = {
      method<&LanguageModelImpl::parameter_count>("parameter_count", "", "Number of parameters by part {total=, embedding=, lstm= (the encoder's part: transformer= for a Transformer), decoder=, head=} (frozen ones included); the decoder part is its bias (and its weight when untied)."),
      method<&LanguageModelImpl::output_is_centred>("output_centred", "", "True when the encoder's output h is centred (a Transformer's final LayerNorm): a Softmax head's log P then has rank ≤ d + 1, not d + 2 (lmkit.analysis.hidden_size's centred option; docs/analysis.md)."),
      method<&forward_step>("forward", "ids, hidden", "Encoder output h [T, B, d] (after the output dropout; d = nhidlast, or a Transformer's emb) for int64 token ids [T, B] (0-based ids). hidden: the encoder's state (the AWD-LSTM's {{h, c}, ...} per layer, a Transformer's {{previous tokens}}), nil to start a stream; the returned state is detached."),
      method<&log_probs_step>("log_probs", "ids, hidden", "Next-token log-probabilities [T·B, N] (row t·B + b is position t of sequence b)."),
      method<&loss_step>("loss", "ids, targets, hidden", "Mean NLL of targets (int64 [T, B] or [T·B]) as a scalar Tensor with autograd; the AR/TAR terms of this call are then m:ar() and m:tar()."),
      method<&last_ar>("ar", "", "AR = α·mean(dropped last-layer output²) of the last m:loss call (with autograd); 0 for an encoder without it (a Transformer)."),
      method<&last_tar>("tar", "", "TAR = β·mean((h_t − h_{t−1})²) on the undropped last-layer output of the last m:loss call."),
      method<&top_k_step>("top_k", "ids, k, hidden", "The k most likely next tokens per position: log-probabilities [T·B, k] and token ids [T·B, k] (0-based ids)."),
      method<&training_mode>("train", "", "Training mode: dropouts on, AdvSoft's perturbation on."),
      method<&evaluation_mode>("eval", "", "Evaluation mode: no dropout."),
      method<&is_training>("is_training", "", "True in training mode."),
      method<&trainable_parameters>("parameters", "", "The trainable parameters (shared with the model: update them in place, e.g. under lmkit.no_grad)."),
      method<&own_lr_parameters>("own_lr_parameters", "", "Parameters that train with their own learning rate (LMS-PLIF's slope parameters v; empty for other heads). They are also in m:parameters()."),
      method<&zero_state>("init_hidden", "batch_size", "The encoder's initial state for a batch of B streams: the AWD-LSTM's {{h, c}, ...} (zeros [1, B, size] per layer), a Transformer's {{no tokens [0, B]}}."),
      method<&save_model>("save", "path", "Writes weights, config and lmkit's version to one checkpoint file (atomically: temporary file + rename, with a checksum)."),
      method<&export_reference_checkpoint>("export", "path", "Writes the weights as a state_dict of the reference code (format \"awd-lstm\": a softmax head; \"mos\": a MoS head) that torch.load + load_state_dict read into its structure; .pt by default (see docs/analysis.md, Your own model)."),
      method<&model_config_text>("config", "", "The full configuration as JSON (what a checkpoint stores)."),
      method<&move_to_device>("to", "device", "Moves the parameters to \"cpu\", \"cuda\" or \"cuda:N\"."),
      method<&to_float64>("double", "", "Converts the parameters to float64 (for gradient checks and exact rank analysis)."),
  };
  register_class<LanguageModelImpl>(L, methods,
      "lmkit.Model — a language model (an AWD-LSTM or a causal Transformer encoder) with an output head (lmkit.model{...}, lmkit.load(path)).\n"
      "Token ids are 0-based values (as Torch's embedding takes them), not Lua indices.");
  luaL_getmetatable(L, class_metatable<LanguageModelImpl>().c_str());
  lua_setfield(L, module_index, "Model");
  static const Function functions[] = {
      {"model", lmkit_model, model_doc().c_str()},
      {"load", lmkit_load,
       "lmkit.load(path[, {head = spec}]) -> Model, version\n"
       "A model saved with m:save(path) (or a run's best.ckpt / last.ckpt), in evaluation mode (m:train() to train it "
       "by hand; lmkit.train sets it), and the lmkit version that wrote it. "
       "Truncated, corrupted or foreign files fail with an error naming the file. A model whose head was written in "
       "Lua (lmkit.heads.custom / pointwise: code, which no file holds) loads with that head given again as head = "
       "spec; its parameters are checked against the file by name and shape (docs/lua-heads.md)."},
      entry<&import_reference_checkpoint>("lmkit", "import_checkpoint", "path", "The model of a file saved by the reference code — a state_dict, the whole model, or awd-lstm-lm's list [model, criterion, optimizer]; the zip or the legacy torch.save format — (format \"awd-lstm\": Merity et al.'s awd-lstm-lm; \"mos\": Yang et al.'s MoS code; \"thesis\": the thesis's code, its top_model a head), sizes read from its shapes, in evaluation mode: its log-probabilities are the reference model's, except that a mixture's are log p exactly unless floor = 1e-8 asks for the MoS code's log(p + 1e-8) (see docs/analysis.md, Your own model)."),
  };
  set_functions(L, module_index, "lmkit", functions);
}

}  // namespace lmkit::lua
