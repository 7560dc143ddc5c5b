// Which entries of someone else's weight file are the output layer: the decoder W [N, d] (logits
// l = W h + b) and its bias b [N], by name when given, else by the names common layouts use —
// lm_head.weight (Hugging Face causal LMs), decoder.weight (AWD-LSTM, MoS), embed_out.weight
// (GPT-NeoX), output.weight (LLaMA's original), and, for models that tie their output layer to the
// input embedding and store it once, wte.weight (GPT-2), embed_tokens.weight, word_embeddings.weight,
// encoder.weight (AWD-LSTM with tied weights). Several candidates of one rank are listed and refused:
// the user names one.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/config/declared_result.h"
#include "runtime/tensor_files/tensor_file.h"

namespace lmkit::analysis {

struct OutputLayerRequest {
  std::optional<std::string> decoder;  // the decoder's entry (nil: guessed)
  std::optional<std::string> bias;     // the bias's entry ("none": no bias; nil: <decoder's prefix>.bias when there is one)
};
const config::BoundOptions<OutputLayerRequest>& declared_options(config::Tag<OutputLayerRequest>);

struct OutputLayerEntries {
  std::string decoder;
  std::optional<std::string> bias;
  std::int64_t words = 0, width = 0;  // N and d
  std::string how;                    // "named", or the layout the guess followed, for reports
};
inline auto declared_result(config::Tag<OutputLayerEntries>) {
  return config::result_table(config::result_field("decoder", &OutputLayerEntries::decoder, "the decoder's entry, [N, d]"),
                              config::result_field("bias", &OutputLayerEntries::bias, "its bias's entry, [N] (nil: none)"),
                              config::result_field("words", &OutputLayerEntries::words, "N"),
                              config::result_field("width", &OutputLayerEntries::width, "d"),
                              config::result_field("how", &OutputLayerEntries::how, "how the decoder was found"));
}

// The output layer among `contents` (a tensor file's entries, tensor_file_contents). UsageError
// naming the file's 2-D entries when none or several fit, or when a named entry is missing or of
// the wrong shape.
OutputLayerEntries find_output_layer(const std::vector<StoredTensor>& contents, const OutputLayerRequest& request);
// The same for the file at `path`.
OutputLayerEntries output_layer_entries(const std::string& path, const OutputLayerRequest& request);

}  // namespace lmkit::analysis
