#include "runtime/analysis/output_layer_file.h"

#include <algorithm>

#include "runtime/config/option_schema.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::analysis {
namespace {

struct Layout {
  const char* suffix;
  const char* what;
};
// In order of preference: an untied output layer first, then the embeddings tied models reuse.
constexpr Layout kLayouts[] = {
    {"lm_head.weight", "found by name: the layout of Hugging Face causal LMs"},
    {"decoder.weight", "found by name: the layout of AWD-LSTM and MoS"},
    {"embed_out.weight", "found by name: the layout of GPT-NeoX"},
    {"output.weight", "found by name: the layout of LLaMA's original checkpoints"},
    {"wte.weight", "found by name: GPT-2's input embedding, tied to its output layer"},
    {"embed_tokens.weight", "found by name: an input embedding tied to the output layer"},
    {"word_embeddings.weight", "found by name: an input embedding tied to the output layer"},
    {"encoder.weight", "found by name: AWD-LSTM's embedding, tied to its decoder"},
};

bool ends_with(const std::string& name, const std::string& suffix) {
  return name == suffix || (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
                            name[name.size() - suffix.size() - 1] == '.');
}

std::string matrices(const std::vector<StoredTensor>& contents) {
  std::string text;
  for (const auto& entry : contents) {
    if (entry.shape.size() == 2) text += (text.empty() ? "" : ", ") + entry.name + " " + format_shape(entry.shape);
  }
  return text.empty() ? "none" : text;
}

const StoredTensor* named(const std::vector<StoredTensor>& contents, const std::string& name) {
  const auto found = std::find_if(contents.begin(), contents.end(), [&](const StoredTensor& e) { return e.name == name; });
  return found == contents.end() ? nullptr : &*found;
}

}  // namespace

const config::BoundOptions<OutputLayerRequest>& declared_options(config::Tag<OutputLayerRequest>) {
  static const config::BoundOptions<OutputLayerRequest> options(
      "output_layer", {{"decoder", &OutputLayerRequest::decoder, "the decoder's entry [N, d] (default: guessed from common layouts)"},
                       {"bias", &OutputLayerRequest::bias, "the bias's entry [N]; \"none\": no bias (default: the decoder's own, if any)"}});
  return options;
}

OutputLayerEntries find_output_layer(const std::vector<StoredTensor>& contents, const OutputLayerRequest& request) {
  OutputLayerEntries found;
  const StoredTensor* decoder = nullptr;
  if (request.decoder) {
    decoder = named(contents, *request.decoder);
    if (!decoder) {
      std::vector<std::string> names;
      for (const auto& entry : contents) names.push_back(entry.name);
      throw UsageError("output layer: " + config::unknown_key_text("entry", *request.decoder, names));
    }
    if (decoder->shape.size() != 2) {
      throw UsageError("output layer: '" + decoder->name + "' has size " + format_shape(decoder->shape) +
                       ", not a decoder [N, d]; the file's matrices: " + matrices(contents));
    }
    found.how = "named by the caller";
  } else {
    for (const auto& layout : kLayouts) {
      std::vector<const StoredTensor*> fits;
      for (const auto& entry : contents) {
        if (entry.shape.size() == 2 && ends_with(entry.name, layout.suffix)) fits.push_back(&entry);
      }
      if (fits.size() > 1) {
        std::string names;
        for (const auto* e : fits) names += (names.empty() ? "" : ", ") + e->name;
        throw UsageError("output layer: several entries look like " + std::string(layout.suffix) + " (" + names +
                         "): name the decoder (--set decoder=NAME)");
      }
      if (fits.size() == 1) {
        decoder = fits.front();
        found.how = layout.what;
        break;
      }
    }
    if (!decoder) {
      throw UsageError("output layer: no entry has a name of a known layout (lm_head.weight, decoder.weight, embed_out.weight, "
                       "output.weight, wte.weight, embed_tokens.weight, word_embeddings.weight, encoder.weight): name the "
                       "decoder (--set decoder=NAME); the file's matrices: " + matrices(contents));
    }
  }
  found.decoder = decoder->name;
  found.words = decoder->shape[0];
  found.width = decoder->shape[1];
  if (request.bias && *request.bias == "none") return found;
  if (request.bias) {
    const auto* bias = named(contents, *request.bias);
    if (!bias) throw UsageError("output layer: the file has no entry '" + *request.bias + "' (the bias)");
    if (bias->shape != std::vector<std::int64_t>{found.words}) {
      throw UsageError("output layer: the bias '" + bias->name + "' has size " + format_shape(bias->shape) + ", the decoder " +
                       integer_text(found.words) + " rows");
    }
    found.bias = bias->name;
  } else if (ends_with(found.decoder, "weight")) {
    // "x.weight" → "x.bias"; a lone "weight" → "bias".
    const auto* bias = named(contents, found.decoder.substr(0, found.decoder.size() - 6) + "bias");
    // The decoder's own bias of another size is a damaged or mismatched file, not "no bias": the
    // rank bound (d + 1 with a bias, d without) would be reported for the wrong model.
    if (bias && bias->shape != std::vector<std::int64_t>{found.words}) {
      throw UsageError("output layer: the decoder's bias '" + bias->name + "' has size " + format_shape(bias->shape) +
                       ", but the decoder '" + found.decoder + "' has " + integer_text(found.words) +
                       " rows: name the bias (--set bias=NAME), or analyse without one (--set bias=none)");
    }
    if (bias) found.bias = bias->name;
  }
  return found;
}

OutputLayerEntries output_layer_entries(const std::string& path, const OutputLayerRequest& request) {
  return find_output_layer(tensor_file_contents(path), request);
}

}  // namespace lmkit::analysis
