// Each AWD-LSTM layer keeps its four tensors as windows of one buffer in cuDNN's order
// [w_ih | w_hh | b_ih | b_hh], from the buffer's start (what cuDNN needs to use them in place
// instead of copying them on every call). Proven here on the CPU: the layout after construction,
// to(dtype/device) and checkpoint loads, and that training and evaluation give the same bits as
// the encoder computed with four separate tensors (the layout before the buffer; DropConnect's
// draws included), values and gradients alike.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "ops/dropout.h"
#include "runtime/core/device.h"
#include "runtime/models/checkpoint.h"
#include "runtime/models/awd_lstm.h"
#include "runtime/models/language_model.h"

namespace lmkit {
namespace {

LanguageModel three_layer_model() {
  seed_torch(21);
  LanguageModelOptions o;
  o.encoder(AwdLstmOptions().vocab_size(40).emb(6).nhid(10).nhidlast(6).nlayers(3)
                .dropout(0.2).dropouth(0.2).dropouti(0.2).dropoute(0.1).wdrop(0.4));
  o.head({{"kind", "softmax"}});
  return LanguageModel(o);
}

// Every layer: one storage per layer, the four tensors at the offsets cuDNN lays them out at, the
// storage no larger than the four (cuDNN takes the storage from its start), and no two layers
// sharing a storage.
void expect_flat_layers(const AwdLstmImpl& encoder, const std::string& when) {
  SCOPED_TRACE(when);
  for (std::size_t l = 0; l < encoder.layers.size(); ++l) {
    const auto& layer = encoder.layers[l];
    const int64_t in = layer.w_ih.size(1), h = layer.w_hh.size(1);
    EXPECT_TRUE(encoder.layer_is_flat(l)) << "layer " << l;
    const std::vector<int64_t> offsets{0, 4 * h * in, 4 * h * in + 4 * h * h, 4 * h * in + 4 * h * h + 4 * h};
    const torch::Tensor tensors[] = {layer.w_ih, layer.w_hh, layer.b_ih, layer.b_hh};
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_TRUE(tensors[i].storage().is_alias_of(layer.w_ih.storage())) << "layer " << l << " tensor " << i;
      EXPECT_EQ(tensors[i].storage_offset(), offsets[i]) << "layer " << l << " tensor " << i;
      EXPECT_TRUE(tensors[i].is_contiguous());
      EXPECT_TRUE(tensors[i].requires_grad());
    }
    const int64_t total = offsets[3] + 4 * h;
    EXPECT_EQ(static_cast<int64_t>(layer.w_ih.storage().nbytes()), total * layer.w_ih.element_size()) << "layer " << l;
    if (l > 0) {
      EXPECT_FALSE(layer.w_ih.storage().is_alias_of(encoder.layers[l - 1].w_ih.storage()));
    }
  }
}

std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> out;
  for (const auto& t : tensors) out.push_back(t.detach().clone());
  return out;
}

TEST(FlatLstmWeightsTest, ConstructionPutsEachLayerInOneBufferInCudnnOrder) {
  auto model = three_layer_model();
  expect_flat_layers(model->encoder_as<AwdLstmImpl>(), "after construction");
  // The module still lists the same parameters by name, and they are what the layers hold.
  const auto named = model->encoder->named_parameters();
  EXPECT_TRUE(named["lstm1_w_hh"].is_same(model->encoder_as<AwdLstmImpl>().layers[1].w_hh));
}

TEST(FlatLstmWeightsTest, StaysFlatAfterToDtypeAndDeviceWithTheSameParameterObjects) {
  auto model = three_layer_model();
  const auto before = copies(model->parameters());
  std::vector<c10::TensorImpl*> objects;
  for (const auto& p : model->parameters()) objects.push_back(p.unsafeGetTensorImpl());

  model->to(torch::kFloat64);
  expect_flat_layers(model->encoder_as<AwdLstmImpl>(), "after to(float64)");
  auto params = model->parameters();
  ASSERT_EQ(params.size(), before.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].scalar_type(), torch::kFloat64);
    EXPECT_EQ(params[i].unsafeGetTensorImpl(), objects[i]) << "an optimizer holding parameter " << i << " would lose it";
    EXPECT_TRUE(torch::equal(params[i].to(torch::kFloat32), before[i])) << i;
  }
  model->to(torch::Device(torch::kCPU), torch::kFloat32);
  expect_flat_layers(model->encoder_as<AwdLstmImpl>(), "after to(cpu, float32)");
  model->to(torch::Device(torch::kCPU));
  expect_flat_layers(model->encoder_as<AwdLstmImpl>(), "after to(cpu)");
  params = model->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], before[i])) << i;
}

TEST(FlatLstmWeightsTest, StaysFlatThroughCheckpointsAndInPlaceUpdates) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("lmkit_flat_lstm_" + std::to_string(::getpid()) + "_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir);
  const auto path = (dir / "model.ckpt").string();
  auto model = three_layer_model();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(0.5);  // an optimizer's in-place step
  }
  expect_flat_layers(model->encoder_as<AwdLstmImpl>(), "after an in-place update");
  save_checkpoint(model, path);
  auto loaded = load_checkpoint(path).model;
  expect_flat_layers(loaded->encoder_as<AwdLstmImpl>(), "after load_checkpoint");
  auto other = three_layer_model();
  load_weights(other, path);
  expect_flat_layers(other->encoder_as<AwdLstmImpl>(), "after load_weights into a model");
  const auto a = model->parameters(), b = loaded->parameters(), c = other->parameters();
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
    EXPECT_TRUE(torch::equal(a[i], c[i])) << i;
  }
  std::filesystem::remove_all(dir);
}

// The encoder as it was computed with four tensors of its own per layer: the same dropouts in the
// same order from the same generator, each layer's weights passed as separate tensors.
EncoderOutput separate_tensor_forward(const AwdLstmImpl& encoder, const std::vector<torch::Tensor>& embedding_and_layers,
                                      const torch::Tensor& ids, const EncoderState& hidden, bool train) {
  const auto& o = encoder.options;
  auto x = embedding_dropout(embedding_and_layers[0], ids, o.dropoute(), train);
  x = locked_dropout(x, o.dropouti(), train);
  EncoderOutput result;
  for (std::size_t l = 0; l < encoder.layers.size(); ++l) {
    const auto& w_ih = embedding_and_layers[1 + 4 * l];
    const auto& w_hh = embedding_and_layers[2 + 4 * l];
    const auto& b_ih = embedding_and_layers[3 + 4 * l];
    const auto& b_hh = embedding_and_layers[4 + 4 * l];
    auto dropped = train && o.wdrop() > 0 ? torch::dropout(w_hh, o.wdrop(), true) : w_hh;
    auto out = at::lstm(x, {hidden[l][0], hidden[l][1]}, {w_ih, dropped, b_ih, b_hh}, true, 1, 0.0, train,
                        false, false);
    x = std::get<0>(out);
    result.state.push_back({std::get<1>(out), std::get<2>(out)});
    if (l + 1 < encoder.layers.size()) x = locked_dropout(x, o.dropouth(), train);
  }
  result.raw = x;
  result.output = locked_dropout(x, o.dropout(), train);
  return result;
}

TEST(FlatLstmWeightsTest, TrainingAndEvaluationGiveTheBitsOfSeparateTensors) {
  auto model = three_layer_model();
  auto& encoder = model->encoder_as<AwdLstmImpl>();
  std::vector<torch::Tensor> flat{encoder.embedding_weight};
  for (const auto& layer : encoder.layers) {
    for (const auto& t : {layer.w_ih, layer.w_hh, layer.b_ih, layer.b_hh}) flat.push_back(t);
  }
  auto separate = copies(flat);
  for (auto& t : separate) {
    t.requires_grad_();
    EXPECT_FALSE(t.storage().is_alias_of(flat[1].storage()));
  }
  seed_torch(5);
  const auto ids = torch::randint(40, {7, 3}, torch::kInt64);
  const auto upstream = torch::randn({7, 3, 6});
  for (const bool train : {true, false}) {
    SCOPED_TRACE(train ? "training" : "evaluation");
    for (auto& t : flat) t.mutable_grad() = torch::Tensor();
    for (auto& t : separate) t.mutable_grad() = torch::Tensor();
    encoder.train(train);
    seed_torch(77);
    const auto got = encoder.forward(ids, encoder.init_hidden(3));
    seed_torch(77);
    const auto want = separate_tensor_forward(encoder, separate, ids, encoder.init_hidden(3), train);
    EXPECT_TRUE(torch::equal(got.output, want.output));
    EXPECT_TRUE(torch::equal(got.raw, want.raw));
    for (std::size_t l = 0; l < got.state.size(); ++l) {
      EXPECT_TRUE(torch::equal(got.state[l][0], want.state[l][0])) << l;
      EXPECT_TRUE(torch::equal(got.state[l][1], want.state[l][1])) << l;
    }
    (got.output * upstream).sum().backward();
    (want.output * upstream).sum().backward();
    for (std::size_t i = 0; i < flat.size(); ++i) {
      ASSERT_TRUE(flat[i].grad().defined()) << i;
      EXPECT_TRUE(torch::equal(flat[i].grad(), separate[i].grad())) << "gradient of tensor " << i;
    }
    expect_flat_layers(encoder, "after a forward and backward");
  }
}

// What a CUDA training forward hands cuDNN under DropConnect: one fresh buffer in cuDNN's order
// with the dropped matrix, and an LSTM on it gives the bits of the four tensors — values and
// gradients (the views' gradients reach the arguments).
TEST(FlatLstmWeightsTest, TheTrainingBufferIsOneChunkAndChangesNoBits) {
  seed_torch(8);
  const int64_t in = 5, h = 7;
  std::vector<torch::Tensor> separate{torch::randn({4 * h, in}), torch::randn({4 * h, h}), torch::randn({4 * h}),
                                      torch::randn({4 * h})};
  for (auto& t : separate) t.requires_grad_();
  auto copies_of = copies(separate);
  for (auto& t : copies_of) t.requires_grad_();
  const auto views = contiguous_layer_weights(copies_of[0], copies_of[1], copies_of[2], copies_of[3]);
  ASSERT_EQ(views.size(), 4u);
  int64_t offset = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(views[i].storage().is_alias_of(views[0].storage())) << i;
    EXPECT_EQ(views[i].storage_offset(), offset) << i;
    EXPECT_EQ(views[i].sizes(), separate[i].sizes()) << i;
    offset += views[i].numel();
  }
  EXPECT_EQ(static_cast<int64_t>(views[0].storage().nbytes()), offset * views[0].element_size());
  const auto x = torch::randn({6, 2, in});
  const auto h0 = torch::zeros({1, 2, h}), c0 = torch::zeros({1, 2, h});
  const auto a = at::lstm(x, {h0, c0}, separate, true, 1, 0.0, true, false, false);
  const auto b = at::lstm(x, {h0, c0}, views, true, 1, 0.0, true, false, false);
  EXPECT_TRUE(torch::equal(std::get<0>(a), std::get<0>(b)));
  const auto upstream = torch::randn({6, 2, h});
  (std::get<0>(a) * upstream).sum().backward();
  (std::get<0>(b) * upstream).sum().backward();
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(torch::equal(separate[i].grad(), copies_of[i].grad())) << i;
}

}  // namespace
}  // namespace lmkit
