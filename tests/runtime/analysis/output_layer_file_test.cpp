// Finding the output layer in other people's weight files: the common layouts, ties, biases, and
// the refusals that name what the file holds.
#include "runtime/analysis/output_layer_file.h"

#include <gtest/gtest.h>

#include "runtime/core/error.h"

namespace lmkit::analysis {
namespace {

StoredTensor entry(const std::string& name, std::vector<std::int64_t> shape) { return {name, "float32", std::move(shape), 0}; }

std::string refusal(const std::vector<StoredTensor>& contents, const OutputLayerRequest& request) {
  try {
    find_output_layer(contents, request);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(OutputLayerFileTest, CommonLayoutsAreFoundWithTheirBias) {
  // Hugging Face: lm_head preferred over the tied input embedding.
  auto hf = find_output_layer({entry("model.embed_tokens.weight", {50, 8}), entry("lm_head.weight", {50, 8})}, {});
  EXPECT_EQ(hf.decoder, "lm_head.weight");
  EXPECT_FALSE(hf.bias);
  EXPECT_EQ(hf.words, 50);
  EXPECT_EQ(hf.width, 8);
  // AWD-LSTM: decoder.weight and decoder.bias.
  auto awd = find_output_layer({entry("encoder.weight", {10, 4}), entry("decoder.weight", {10, 4}), entry("decoder.bias", {10})}, {});
  EXPECT_EQ(awd.decoder, "decoder.weight");
  EXPECT_EQ(awd.bias.value_or(""), "decoder.bias");
  // GPT-2 stores its tied output layer once, as the input embedding.
  EXPECT_EQ(find_output_layer({entry("transformer.wte.weight", {30, 6}), entry("transformer.wpe.weight", {12, 6})}, {}).decoder,
            "transformer.wte.weight");
  // The decoder's own bias of the wrong length is named, not dropped (the report said "bias: none"
  // and gave the rank bound of a model without one).
  try {
    find_output_layer({entry("decoder.weight", {10, 4}), entry("decoder.bias", {4})}, {});
    ADD_FAILURE() << "a bias of the wrong length was accepted or dropped";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "output layer: the decoder's bias 'decoder.bias' has size 4, but the decoder 'decoder.weight' "
                           "has 10 rows: name the bias (--set bias=NAME), or analyse without one (--set bias=none)");
  }
  // "bias = none" leaves it out; a named bias must fit.
  OutputLayerRequest no_bias;
  no_bias.bias = "none";
  EXPECT_FALSE(find_output_layer({entry("decoder.weight", {10, 4}), entry("decoder.bias", {10})}, no_bias).bias);
  OutputLayerRequest named;
  named.decoder = "W";
  named.bias = "b";
  const auto plain = find_output_layer({entry("W", {7, 3}), entry("b", {7})}, named);
  EXPECT_EQ(plain.decoder, "W");
  EXPECT_EQ(plain.bias.value_or(""), "b");
  EXPECT_EQ(plain.how, "named by the caller");
}

TEST(OutputLayerFileTest, NoneOrSeveralCandidatesAreRefusedWithTheFilesMatrices) {
  const auto none = refusal({entry("a", {3, 4}), entry("v", {3})}, {});
  EXPECT_NE(none.find("no entry has a name of a known layout"), std::string::npos) << none;
  EXPECT_NE(none.find("matrices: a 3x4"), std::string::npos) << none;
  const auto several = refusal({entry("enc.decoder.weight", {3, 4}), entry("dec.decoder.weight", {3, 4})}, {});
  EXPECT_NE(several.find("several entries look like decoder.weight"), std::string::npos) << several;
  OutputLayerRequest missing;
  missing.decoder = "lm_haed.weight";
  EXPECT_NE(refusal({entry("lm_head.weight", {3, 4})}, missing).find("did you mean 'lm_head.weight'"), std::string::npos);
  OutputLayerRequest vector;
  vector.decoder = "v";
  EXPECT_NE(refusal({entry("v", {3})}, vector).find("not a decoder [N, d]"), std::string::npos);
  OutputLayerRequest bad_bias;
  bad_bias.bias = "decoder.bias";
  EXPECT_NE(refusal({entry("decoder.weight", {10, 4}), entry("decoder.bias", {4})}, bad_bias).find("the decoder 10 rows"),
            std::string::npos);
}

}  // namespace
}  // namespace lmkit::analysis
