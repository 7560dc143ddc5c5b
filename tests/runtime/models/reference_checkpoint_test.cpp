// Checkpoints of the reference code in and out. The fixtures (files/make_reference_checkpoints.py)
// are state_dicts that PyTorch saved from models of the reference structure, with the
// log-probabilities PyTorch computed on fixed ids: the independent truth an import must reproduce.
#include "runtime/models/awd_lstm.h"
#include "runtime/models/transformer_encoder.h"
#include "runtime/models/reference_checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/warning.h"
#include "runtime/heads/mos_head.h"
#include "runtime/tensor_files/tensor_file.h"
#include "tests/support/failure_text.h"
#include "tests/support/legacy_torch_save.h"
#include "tests/support/source_tree.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

std::string fixture(const std::string& name) {
  return testing::source_tree_path("tests/runtime/models/files/" + name).string();
}

using testing::contains;
using testing::failure;

ImportCheckpointOptions import_as(const std::string& format) {
  ImportCheckpointOptions o;
  o.format = format;
  return o;
}

ExportCheckpointOptions export_as(const std::string& format) {
  ExportCheckpointOptions o;
  o.format = format;
  return o;
}

std::map<std::string, torch::Tensor> reference_outputs() { return read_tensor_file(fixture("reference_outputs.pt"), {}); }

torch::Tensor log_probs_of(LanguageModel& model, const torch::Tensor& ids) {
  torch::NoGradGuard no_grad;
  return model->log_probs(ids, model->init_hidden(ids.size(1))).first;
}

// The largest difference of the parameters of two models of the same structure.
double largest_parameter_difference(const LanguageModel& a, const LanguageModel& b) {
  const auto pa = a->named_parameters(true), pb = b->named_parameters(true);
  EXPECT_EQ(pa.size(), pb.size());
  double largest = 0;
  for (const auto& item : pa) {
    const auto* other = pb.find(item.key());
    EXPECT_NE(other, nullptr) << item.key();
    if (other) largest = std::max(largest, (item.value() - *other).abs().max().item<double>());
  }
  return largest;
}

class ReferenceCheckpointTest : public testing::TemporaryFolderTest {
 protected:
  ReferenceCheckpointTest() : TemporaryFolderTest("lmkit_reference_checkpoint_", /*create=*/true) {}
  // The fixture `name` with `change` applied to its entries, written as a file of this test.
  std::string altered(const std::string& name, const std::function<void(std::map<std::string, torch::Tensor>&)>& change) {
    auto entries = read_tensor_file(fixture(name), {});
    change(entries);
    const auto path = dir("altered_" + name);
    write_tensor_file(path, entries, {});
    return path;
  }
};

TEST_F(ReferenceCheckpointTest, AnAwdLstmStateDictGivesTheReferenceLogProbabilities) {
  auto model = import_reference_checkpoint(fixture("awd_lstm_reference.pt"), import_as("awd-lstm"));
  const auto& e = model->encoder_as<AwdLstmImpl>().options;
  EXPECT_EQ(e.vocab_size(), 23);
  EXPECT_EQ(e.emb(), 6);
  EXPECT_EQ(e.nhid(), 10);
  EXPECT_EQ(e.nhidlast(), 6);
  EXPECT_EQ(e.nlayers(), 3);
  EXPECT_TRUE(model->options.tie_weights());
  EXPECT_TRUE(model->options.decoder_bias());
  EXPECT_EQ(model->head->kind(), "softmax");
  EXPECT_FALSE(model->is_training());
  EXPECT_EQ(model->parameters().front().scalar_type(), torch::kFloat32);
  // Parameters by closed form: embedding N·emb, layers 4h(in + h) + 8h, decoder bias N.
  const std::int64_t expected = 23 * 6 + (40 * (6 + 10) + 80) + (40 * (10 + 10) + 80) + (24 * (10 + 6) + 48) + 23;
  EXPECT_EQ(model->parameter_count().at("total"), expected);

  const auto outputs = reference_outputs();
  const auto got = log_probs_of(model, outputs.at("ids"));
  const auto want = outputs.at("awd_lstm_log_probs");
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-5);
  // Not a trivially flat output: the words' log-probabilities spread over several nats.
  EXPECT_GT((want.max() - want.min()).item<double>(), 2.0);
}

TEST_F(ReferenceCheckpointTest, AMosStateDictAndAWholeSavedModelGiveTheReferenceLogProbabilities) {
  const auto outputs = reference_outputs();
  for (const auto* name : {"mos_reference.pt", "mos_whole_model.pt"}) {
    SCOPED_TRACE(name);
    auto model = import_reference_checkpoint(fixture(name), import_as("mos"));
    const auto& e = model->encoder_as<AwdLstmImpl>().options;
    EXPECT_EQ(e.nhidlast(), 8);
    EXPECT_EQ(e.emb(), 6);
    EXPECT_EQ(model->head->kind(), "mos");
    EXPECT_EQ(model->options.head().at("K"), 3);
    EXPECT_TRUE(model->options.tie_weights());
    const auto got = log_probs_of(model, outputs.at("ids"));
    EXPECT_LE((got - outputs.at("mos_log_probs")).abs().max().item<double>(), 1e-5);
  }
}

// The original codes on PyTorch 0.x wrote the legacy format: the same state_dicts and whole
// models as the fixtures, in it (their object pickles are PyTorch's own), import to the same
// log-probabilities.
TEST_F(ReferenceCheckpointTest, LegacyTorchSaveFilesImportLikeTheirZipCopies) {
  const auto outputs = reference_outputs();
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"awd_lstm_reference.pt", "awd-lstm", "awd_lstm_log_probs"},
      {"mos_reference.pt", "mos", "mos_log_probs"},
      {"mos_whole_model.pt", "mos", "mos_log_probs"}};
  for (const auto& [name, format, truth] : cases) {
    SCOPED_TRACE(name);
    const auto legacy = dir("legacy_" + name);
    write_file_atomically(legacy, testing::legacy_copy_of_zip(read_file(fixture(name))));
    auto model = import_reference_checkpoint(legacy, import_as(format));
    const auto got = log_probs_of(model, outputs.at("ids"));
    EXPECT_LE((got - outputs.at(truth)).abs().max().item<double>(), 1e-5);
  }
  // Written by PyTorch itself in the legacy format (files/make_reference_checkpoints.py): the list
  // [model, criterion, optimizer] of awd-lstm-lm's main.py, and the MoS code's whole model, each
  // class named by a ('module', class, file, source) persistent id whose source is not run.
  for (const auto& [name, format, truth] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"awd_lstm_saved_list_legacy.pt", "awd-lstm", "awd_lstm_log_probs"}, {"mos_whole_model_legacy.pt", "mos", "mos_log_probs"}}) {
    SCOPED_TRACE(name);
    std::vector<std::string> notes;
    const auto previous = set_warning_handler([&](const std::string& m) { notes.push_back(m); });
    auto model = import_reference_checkpoint(fixture(name), import_as(format));
    set_warning_handler(previous);
    EXPECT_LE((log_probs_of(model, outputs.at("ids")) - outputs.at(truth)).abs().max().item<double>(), 1e-5);
    EXPECT_EQ(notes.size(), format == "awd-lstm" ? 1u : 0u);  // the list's model is taken and said so
    if (!notes.empty()) EXPECT_TRUE(contains(notes[0], "its element 0 is the model, imported")) << notes[0];
  }
}

// awd-lstm-lm's main.py saves torch.save([model, criterion, optimizer], f): the model is the
// element with an embedding, taken with a line saying so; the criterion's tensors are left out.
TEST_F(ReferenceCheckpointTest, TheModelOfASavedListIsTakenAndSaidSo) {
  const auto path = altered("awd_lstm_reference.pt", [](auto& entries) {
    std::map<std::string, torch::Tensor> listed;
    for (auto& [name, tensor] : entries) listed["0." + name] = tensor;
    listed["1.tail_vectors"] = torch::zeros({2, 6});  // a SplitCrossEntropyLoss's parameter
    listed["2"] = torch::zeros({3});                    // a tensor saved as an element of the list
    entries = listed;
  });
  std::vector<std::string> notes;
  const auto previous = set_warning_handler([&](const std::string& m) { notes.push_back(m); });
  auto model = import_reference_checkpoint(path, import_as("awd-lstm"));
  set_warning_handler(previous);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "its element 0 is the model, imported; the other elements' 2 tensors are left out (1.tail_vectors, ...)"))
      << notes[0];
  const auto outputs = reference_outputs();
  EXPECT_LE((log_probs_of(model, outputs.at("ids")) - outputs.at("awd_lstm_log_probs")).abs().max().item<double>(), 1e-5);
  // Two elements that both look like a model: none is chosen, and the entries are named.
  const auto two = altered("awd_lstm_reference.pt", [](auto& entries) {
    std::map<std::string, torch::Tensor> listed;
    for (auto& [name, tensor] : entries) listed["0." + name] = listed["1." + name] = tensor;
    entries = listed;
  });
  EXPECT_TRUE(contains(failure([&] { import_reference_checkpoint(two, import_as("awd-lstm")); }), "0.decoder.bias"));
  // A file whose object holds no module (an optimizer saved alone): refused, naming what it holds.
  const auto optimizer = dir("optimizer.pt");
  write_file_atomically(optimizer, testing::kLegacyMagic + testing::legacy_protocol(1001) + testing::legacy_facts(true) +
                                       "\x80\x02" "ctorch.optim.sgd\nSGD\n)\x81}(" + testing::pickled_string("lr") + "K\x1eub." +
                                       testing::legacy_keys({}));
  const auto text = failure([&] { import_reference_checkpoint(optimizer, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "holds no tensor (its object is an object of torch.optim.sgd.SGD), so no model")) << text;
}

// The MoS code's log(p + 1e-8), on a model whose words reach p < 1e-8: imported exact by default,
// as the MoS code computes it with floor = 1e-8; the two references differ by log(1 + 1e-8/p), which
// has no bound as p falls.
TEST_F(ReferenceCheckpointTest, TheMosCodesFloorIsImportedWhenAskedAndExactLogPOtherwise) {
  const auto outputs = reference_outputs();
  const auto& exact = outputs.at("mos_floor_exact_log_probs");
  const auto& floored = outputs.at("mos_floor_log_probs");
  EXPECT_GT((floored - exact).max().item<double>(), 10.0);
  auto model = import_reference_checkpoint(fixture("mos_floor_reference.pt"), import_as("mos"));
  EXPECT_EQ(model->options.head().at("floor"), 0.0);
  // float32 log-probabilities down to −37: 1e-5 relative.
  const auto near = [](const torch::Tensor& got, const torch::Tensor& want) {
    return ((got - want).abs() / want.abs().clamp_min(1.0)).max().item<double>();
  };
  EXPECT_LE(near(log_probs_of(model, outputs.at("ids")), exact), 1e-5);
  auto options = import_as("mos");
  options.floor = 1e-8;
  auto with_floor = import_reference_checkpoint(fixture("mos_floor_reference.pt"), options);
  EXPECT_EQ(with_floor->options.head().at("floor"), 1e-8);
  EXPECT_LE(near(log_probs_of(with_floor, outputs.at("ids")), floored), 1e-5);

  auto softmax = import_as("awd-lstm");
  softmax.floor = 1e-8;
  EXPECT_TRUE(contains(failure([&] { import_reference_checkpoint(fixture("awd_lstm_reference.pt"), softmax); }),
                       "floor is a mixture head's"));
  softmax.floor = 0.0;  // no floor, said: nothing to refuse
  EXPECT_EQ(import_reference_checkpoint(fixture("awd_lstm_reference.pt"), softmax)->head->kind(), "softmax");
}

// The thesis's code: base_model./top_model. names, each top model's head, against the
// log-probabilities its computation gives (files/make_reference_checkpoints.py).
TEST_F(ReferenceCheckpointTest, EveryTopModelOfTheThesisCodeGivesItsLogProbabilities) {
  const auto outputs = read_tensor_file(fixture("thesis_outputs.pt"), {});
  struct Case {
    std::string top, file, kind;
    std::optional<std::string> given;  // top_model, when the file does not say
  };
  const std::vector<Case> cases{{"smax", "thesis_smax.pt", "softmax", "smax"},
                                {"gs_smax", "thesis_smax.pt", "gss", "gs_smax"},
                                {"s_smax", "thesis_smax.pt", "sigsoftmax", "s_smax"},
                                {"adv_smax", "thesis_smax.pt", "advsoft", "adv_smax"},
                                {"plif_smax", "thesis_plif_smax.pt", "plif", std::nullopt},
                                {"mos", "thesis_mos.pt", "mos", "mos"},
                                {"moc", "thesis_mos.pt", "moc", "moc"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.top);
    auto options = import_as("thesis");
    options.top_model = c.given;
    if (c.top == "gs_smax") {
      options.gs_smax_c = 0.5;
      options.gs_smax_k = 2.5;
    }
    if (c.top == "plif_smax") options.plif_smax_t = 4.0;
    auto model = import_reference_checkpoint(fixture(c.file), options);
    EXPECT_EQ(model->head->kind(), c.kind);
    EXPECT_TRUE(model->options.tie_weights());
    const auto want = outputs.at(c.top + "_log_probs");
    EXPECT_LE((log_probs_of(model, outputs.at("ids")) - want).abs().max().item<double>(), 1e-5);
    EXPECT_GT((want.max() - want.min()).item<double>(), 2.0);
    if (c.top == "plif_smax") {
      EXPECT_EQ(model->options.head().at("K"), 40);
      EXPECT_EQ(model->options.head().at("authors_offset"), true);  // f(−T) = 0, as the thesis code's f-logits
    }
    if (c.top == "mos") {
      EXPECT_EQ(model->options.head().at("K"), 3);
    }
    if (c.top == "adv_smax") {
      EXPECT_EQ(model->options.head().at("eps"), 0.005);
      EXPECT_EQ(model->options.head().at("relative"), true);
    }
  }
  // The same weights under another computation are another model: each case's settings matter.
  EXPECT_GT((outputs.at("gs_smax_log_probs") - outputs.at("smax_log_probs")).abs().max().item<double>(), 0.1);
  EXPECT_GT((outputs.at("moc_log_probs") - outputs.at("mos_log_probs")).abs().max().item<double>(), 1e-3);
}

TEST_F(ReferenceCheckpointTest, AThesisCheckpointSaysWhatItLacksAndOtherFormatsPointToIt) {
  auto text = failure([] { import_reference_checkpoint(fixture("thesis_mos.pt"), import_as("thesis")); });
  EXPECT_TRUE(contains(text, "top_model = \"mos\"")) << text;
  EXPECT_TRUE(contains(text, "\"moc\"")) << text;
  auto smax = import_as("thesis");
  smax.top_model = "smax";
  text = failure([&] { import_reference_checkpoint(fixture("thesis_plif_smax.pt"), smax); });
  EXPECT_TRUE(contains(text, "'top_model.plif_w' is plif_smax's")) << text;
  auto plif = import_as("thesis");
  plif.top_model = "plif_smax";
  text = failure([&] { import_reference_checkpoint(fixture("thesis_smax.pt"), plif); });
  EXPECT_TRUE(contains(text, "no entry 'top_model.plif_w'")) << text;
  EXPECT_TRUE(contains(text, "is top_model right?")) << text;

  EXPECT_TRUE(contains(failure([] { import_reference_checkpoint(fixture("thesis_smax.pt"), import_as("awd-lstm")); }),
                       "use format = \"thesis\""));
  // smax, gs_smax, s_smax and adv_smax files hold the same entries: the top model must be said.
  text = failure([] { import_reference_checkpoint(fixture("thesis_smax.pt"), import_as("thesis")); });
  EXPECT_TRUE(contains(text, "say which with top_model = \"smax\", \"gs_smax\", \"s_smax\" or \"adv_smax\"")) << text;
  EXPECT_TRUE(contains(failure([] { import_reference_checkpoint(fixture("awd_lstm_reference.pt"), import_as("thesis")); }),
                       "use format = \"awd-lstm\" or \"mos\""));
  const auto moved = altered("thesis_smax.pt", [](auto& e) {
    e["top_model.encoder.weight"] = e.at("base_model.encoder.weight");
    e.erase("base_model.encoder.weight");
  });
  smax.top_model = "smax";
  text = failure([&] { import_reference_checkpoint(moved, smax); });
  EXPECT_TRUE(contains(text, "not part of a thesis-code state_dict: top_model.encoder.weight")) << text;
  const auto missing = altered("thesis_smax.pt", [](auto& e) { e.erase("base_model.rnns.2.module.bias_ih_l0"); });
  text = failure([&] { import_reference_checkpoint(missing, smax); });
  EXPECT_TRUE(contains(text, "no entry 'base_model.rnns.2.module.bias_ih_l0'")) << text;

  auto stray = import_as("mos");
  stray.top_model = "mos";
  EXPECT_TRUE(contains(failure([&] { import_reference_checkpoint(fixture("mos_reference.pt"), stray); }),
                       "top_model is an option of format \"thesis\""));
  // A setting of one top model names it when top_model is not given: gs_smax files look like smax's.
  auto named = import_as("thesis");
  named.gs_smax_c = 0.5;
  named.gs_smax_k = 2.5;
  EXPECT_EQ(import_reference_checkpoint(fixture("thesis_smax.pt"), named)->head->kind(), "gss");
  named.adv_smax_alpha = 0.01;
  EXPECT_TRUE(contains(failure([&] { import_reference_checkpoint(fixture("thesis_smax.pt"), named); }),
                       "settings of more than one top model"));
  auto mismatched = import_as("thesis");
  mismatched.top_model = "smax";
  mismatched.gs_smax_c = 1.0;
  EXPECT_TRUE(contains(failure([&] { import_reference_checkpoint(fixture("thesis_smax.pt"), mismatched); }),
                       "gs_smax_c is a setting of top_model \"gs_smax\""));
}

TEST_F(ReferenceCheckpointTest, AnExportHasTheReferenceNamesAndShapesAndImportsBackExactly) {
  for (const std::string format : {"awd-lstm", "mos"}) {
    SCOPED_TRACE(format);
    const auto reference = fixture(format == "mos" ? "mos_reference.pt" : "awd_lstm_reference.pt");
    auto original = import_reference_checkpoint(reference, import_as(format));
    const auto path = dir(format + ".pt");
    export_reference_checkpoint(original, path, export_as(format));
    // The names and shapes of a fresh reference model's state_dict: the fixture's, less the copies
    // WeightDrop left after its forward.
    std::map<std::string, std::vector<std::int64_t>> want, got;
    for (const auto& entry : tensor_file_contents(reference)) {
      const auto& n = entry.name;
      if (n.size() < 4 || n.compare(n.size() - 4, 4, "_raw") != 0) {
        if (n.find("weight_hh_l0") != std::string::npos) continue;
      }
      want[n] = entry.shape;
    }
    for (const auto& entry : tensor_file_contents(path)) got[entry.name] = entry.shape;
    EXPECT_EQ(got, want);

    auto back = import_reference_checkpoint(path, import_as(format));
    EXPECT_EQ(largest_parameter_difference(original, back), 0.0);
    EXPECT_EQ(back->options.tie_weights(), true);
    const auto ids = reference_outputs().at("ids");
    EXPECT_TRUE(torch::equal(log_probs_of(original, ids), log_probs_of(back, ids)));
  }
}

TEST_F(ReferenceCheckpointTest, AnUntiedModelWithoutWeightDropRoundTripsThroughSafetensors) {
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(17).emb(5).nhid(7).nhidlast(4).nlayers(2)).tie_weights(false);
  LanguageModel model(o);
  model->eval();
  auto options = export_as("awd-lstm");
  options.weight_drop = false;
  const auto path = dir("plain.safetensors");
  export_reference_checkpoint(model, path, options);
  std::set<std::string> names;
  for (const auto& entry : tensor_file_contents(path)) names.insert(entry.name);
  EXPECT_TRUE(names.count("rnns.1.weight_hh_l0"));
  EXPECT_FALSE(names.count("rnns.1.module.weight_hh_l0_raw"));
  auto back = import_reference_checkpoint(path, import_as("awd-lstm"));
  EXPECT_FALSE(back->options.tie_weights());
  EXPECT_EQ(back->encoder_as<AwdLstmImpl>().options.nhidlast(), 4);
  EXPECT_EQ(largest_parameter_difference(model, back), 0.0);
}

TEST_F(ReferenceCheckpointTest, ADataParallelPrefixAndFloat64WeightsAreRead) {
  const auto path = altered("awd_lstm_reference.pt", [](auto& entries) {
    std::map<std::string, torch::Tensor> renamed;
    for (auto& [name, t] : entries) renamed["module." + name] = t.to(torch::kFloat64);
    entries = renamed;
  });
  auto model = import_reference_checkpoint(path, import_as("awd-lstm"));
  EXPECT_EQ(model->parameters().front().scalar_type(), torch::kFloat64);
  const auto outputs = reference_outputs();
  EXPECT_LE((log_probs_of(model, outputs.at("ids")) - outputs.at("awd_lstm_log_probs")).abs().max().item<double>(), 1e-5);
}

TEST_F(ReferenceCheckpointTest, TheWrongFormatIsNamedWithTheRightOne) {
  EXPECT_TRUE(contains(failure([] { import_reference_checkpoint(fixture("mos_reference.pt"), import_as("awd-lstm")); }),
                       "use format = \"mos\""));
  EXPECT_TRUE(contains(failure([] { import_reference_checkpoint(fixture("awd_lstm_reference.pt"), import_as("mos")); }),
                       "use format = \"awd-lstm\""));
  EXPECT_TRUE(contains(failure([] { import_reference_checkpoint(fixture("mos_reference.pt"), import_as("gpt")); }),
                       "format must be \"awd-lstm\", \"mos\" or \"thesis\""));
}

TEST_F(ReferenceCheckpointTest, MissingMisshapenAndUnexpectedEntriesAreNamed) {
  const auto missing = altered("awd_lstm_reference.pt", [](auto& e) { e.erase("rnns.1.module.bias_hh_l0"); });
  auto text = failure([&] { import_reference_checkpoint(missing, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, missing)) << text;
  EXPECT_TRUE(contains(text, "no entry 'rnns.1.module.bias_hh_l0' [40]")) << text;

  const auto short_bias = altered("awd_lstm_reference.pt", [](auto& e) { e["decoder.bias"] = torch::zeros({22}); });
  text = failure([&] { import_reference_checkpoint(short_bias, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "entry 'decoder.bias' is [22], expected [23]")) << text;

  const auto wrong_input = altered("awd_lstm_reference.pt", [](auto& e) { e["rnns.1.module.weight_ih_l0"] = torch::zeros({40, 9}); });
  text = failure([&] { import_reference_checkpoint(wrong_input, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "'rnns.1.module.weight_ih_l0' is [40, 9], expected [4·h, 10]")) << text;

  const auto gap = altered("awd_lstm_reference.pt", [](auto& e) {
    for (const auto* field : {"weight_ih_l0", "weight_hh_l0_raw", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"}) {
      e.erase(std::string("rnns.1.module.") + field);
    }
  });
  text = failure([&] { import_reference_checkpoint(gap, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "rnns.0 … rnns.1, the file has rnns.0, 2")) << text;

  const auto extra = altered("awd_lstm_reference.pt", [](auto& e) { e["rnns.0.layers.0.weight"] = torch::zeros({2}); });
  text = failure([&] { import_reference_checkpoint(extra, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "not part of an AWD-LSTM state_dict: rnns.0.layers.0.weight")) << text;
  EXPECT_TRUE(contains(text, "QRNN")) << text;

  const auto integers = altered("awd_lstm_reference.pt", [](auto& e) { e["decoder.bias"] = torch::zeros({23}, torch::kInt64); });
  text = failure([&] { import_reference_checkpoint(integers, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "entry 'decoder.bias' holds Long, not floating point")) << text;

  // A NaN or infinite weight: the entry, the counts and the first place are named (every format).
  const auto diverged = altered("awd_lstm_reference.pt", [](auto& e) {
    auto w = e.at("rnns.0.module.weight_hh_l0_raw").clone();
    w[2][3] = std::numeric_limits<float>::quiet_NaN();
    w[5][1] = std::numeric_limits<float>::infinity();
    w[6][0] = std::numeric_limits<float>::quiet_NaN();
    e["rnns.0.module.weight_hh_l0_raw"] = w;
  });
  text = failure([&] { import_reference_checkpoint(diverged, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "entry 'rnns.0.module.weight_hh_l0_raw' holds 2 NaN and 1 infinite values of ")) << text;
  EXPECT_TRUE(contains(text, "(the first at [2, 3]): a model saved after its training diverged")) << text;
  const auto slopes = altered("thesis_plif_smax.pt", [](auto& e) {
    for (auto& item : e) {
      if (item.first.size() >= 6 && item.first.compare(item.first.size() - 6, 6, "plif_w") == 0) {
        auto w = item.second.clone();
        w[7] = -std::numeric_limits<float>::infinity();
        item.second = w;
      }
    }
  });
  auto thesis = import_as("thesis");
  thesis.plif_smax_t = 4.0;
  text = failure([&] { import_reference_checkpoint(slopes, thesis); });
  EXPECT_TRUE(contains(text, "plif_w' holds 1 infinite value of 40 (the first at [7])")) << text;

  const auto uneven = altered("awd_lstm_reference.pt", [](auto& e) {
    e["rnns.1.module.weight_ih_l0"] = torch::zeros({48, 10});
    e["rnns.1.module.weight_hh_l0_raw"] = torch::zeros({48, 12});
    e.erase("rnns.1.module.weight_hh_l0");
    e["rnns.1.module.bias_ih_l0"] = torch::zeros({48});
    e["rnns.1.module.bias_hh_l0"] = torch::zeros({48});
    e["rnns.2.module.weight_ih_l0"] = torch::zeros({24, 12});
  });
  text = failure([&] { import_reference_checkpoint(uneven, import_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "inner LSTM layers differ in size")) << text;

  const auto no_components = altered("mos_reference.pt", [](auto& e) {
    e["prior.weight"] = torch::zeros({0, 8});
    e["latent.0.weight"] = torch::zeros({0, 8});
    e["latent.0.bias"] = torch::zeros({0});
  });
  text = failure([&] { import_reference_checkpoint(no_components, import_as("mos")); });
  EXPECT_TRUE(contains(text, "its shapes make no model")) << text;
  EXPECT_TRUE(contains(text, "K")) << text;

  EXPECT_TRUE(contains(failure([&] { import_reference_checkpoint(dir("absent.pt"), import_as("awd-lstm")); }), "absent.pt"));
}

TEST_F(ReferenceCheckpointTest, OnlyTheHeadsOfTheReferenceStructuresAreExported) {
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(11).emb(4).nhid(6).nhidlast(4).nlayers(1));
  o.head(nlohmann::json{{"kind", "sigsoftmax"}});
  LanguageModel model(o);
  const auto text = failure([&] { export_reference_checkpoint(model, dir("x.pt"), export_as("awd-lstm")); });
  EXPECT_TRUE(contains(text, "this model's head is sigsoftmax")) << text;
  EXPECT_FALSE(std::filesystem::exists(dir("x.pt")));
  o.head(nlohmann::json{{"kind", "softmax"}});
  LanguageModel softmax(o);
  EXPECT_TRUE(contains(failure([&] { export_reference_checkpoint(softmax, dir("x.pt"), export_as("mos")); }), "head is softmax"));
  LanguageModelOptions t;
  t.encoder(TransformerOptions{11, 4, 1, 2, 8, 6, "learned", 0.0, 0.0});
  LanguageModel transformer(t);
  EXPECT_TRUE(contains(failure([&] { export_reference_checkpoint(transformer, dir("x.pt"), export_as("awd-lstm")); }),
                       "this model's encoder is a Transformer"));
}

}  // namespace
}  // namespace lmkit
