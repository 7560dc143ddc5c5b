// Device placement, proven without a GPU. A tensor made on the CPU inside code that should follow
// its input's device is the bug only a GPU reveals; here the fused ops' fallbacks and the training
// step's pieces run on Torch's `meta` device instead. (Whole models cannot: Torch 1.13's C++
// Module::to refuses meta — set_data's "incompatible tensor type" — so the model and head code is
// covered by structure.tensor_factories and by the counted host reads of host_sync_test.cpp.) Meta tensors have shapes and dtypes but no data, every ATen op with a
// shape function runs on them, and Torch refuses to mix them with CPU tensors (0-dim CPU scalars
// excepted, which CUDA accepts too) — so a misplaced tensor fails these tests as it would fail on
// a GPU. A CPU-only Torch has no other device type that runs arbitrary ops. Reading values back
// (.item(), a copy to the host) is impossible on meta, which makes these tests also catch any
// host synchronisation the code did not route through read_to_host. What meta cannot run (LAPACK
// on the host, GLPK) is covered by structure.tensor_factories; docs/development.md lists which is which.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include <torch/version.h>

#include "ops/dropout.h"
#include "ops/gss_log_softmax.h"
#include "ops/mixture_nll.h"
#include "ops/plif.h"
#include "runtime/core/error.h"
#include "runtime/models/checked_tokens.h"
#include "runtime/models/language_model.h"
#include "runtime/training/gradient_clipping.h"
#include "runtime/training/optimizer.h"

namespace lmkit {
namespace {

const torch::Device kMeta(torch::kMeta);

torch::Tensor on_meta(at::IntArrayRef sizes, torch::ScalarType type = torch::kFloat32) {
  return torch::empty(sizes, torch::TensorOptions().dtype(type).device(kMeta));
}

TEST(DevicePlacementTest, MetaRefusesToMixWithTheCpu) {
  // The premise of this file: if this stopped throwing, nothing below could fail. (Torch 1.13's
  // meta matmul does not compare devices; its elementwise ops, reductions and copies do.)
  EXPECT_THROW(on_meta({3}) + torch::ones({3}), c10::Error);
  EXPECT_THROW(on_meta({3}).mul_(torch::ones({3})), c10::Error);
  EXPECT_THROW(on_meta({3}).item<double>(), c10::Error);
}

// Runs `piece` on meta. A piece that must run (`required`) fails on any error. Another may meet an
// op without a meta kernel in this Torch (many in 1.13: abs.out, flip, ...): that is reported, not
// failed — that piece is then covered by structure.tensor_factories — unless the missing kernel is
// a read back to the host (.item(), nonzero, ...), which is the very thing these tests look for.
template <typename Piece>
void run_on_meta(const std::string& name, bool required, Piece piece) {
  try {
    piece();
  } catch (const c10::NotImplementedError& e) {
    const std::string text = e.what();
    const std::string op = text.substr(0, text.find(" with arguments"));
    if (required) ADD_FAILURE() << name << " must run on meta: " << op;
    for (const char* host_read : {"_local_scalar_dense", "nonzero", "masked_select", "unique", "is_nonzero", "equal"}) {
      if (op.find(std::string("aten::") + host_read + "'") != std::string::npos ||
          op.find(std::string("aten::") + host_read + ".") != std::string::npos) {
        ADD_FAILURE() << name << " reads values back to the host: " << op;
      }
    }
    ASSERT_NE(text.find("'Meta' backend"), std::string::npos) << name << ": " << text;
    std::cout << "[ meta     ] " << name << ": not runnable on meta with this Torch (" << op << ")\n";
  }
}

// What must run on meta: everything in PyTorch 2.x; in Torch 1.13 what its meta kernels allow.
const bool kModernTorch = TORCH_VERSION_MAJOR >= 2;

TEST(DevicePlacementTest, FusedOpFallbacksRunOnMeta) {
  for (auto type : {torch::kFloat32, torch::kFloat64}) {
    const std::string suffix = type == torch::kFloat32 ? " float32" : " float64";
    run_on_meta("gss_log_softmax" + suffix, true, [&] {
      auto l = on_meta({4, 9}, type).requires_grad_();
      auto y = ops::gss_log_softmax(l, 0.5, 2.0);
      y.sum().backward();
      EXPECT_TRUE(y.is_meta() && l.grad().is_meta());
    });
    run_on_meta("plif" + suffix, true, [&] {
      auto x = on_meta({30}, type).requires_grad_();
      auto slopes = on_meta({7}, type).requires_grad_();
      auto f = ops::plif(x, slopes, 3.0);
      f.sum().backward();
      EXPECT_TRUE(f.is_meta() && x.grad().is_meta() && slopes.grad().is_meta());
    });
    for (const double kappa : {1.0, 2.0}) {
      run_on_meta("mixture_nll" + suffix + (kappa == 1.0 ? " MoS" : " MoSS"), kModernTorch, [&] {
        auto latent = on_meta({6, 3, 5}, type).requires_grad_();
        auto prior = on_meta({6, 3}, type).requires_grad_();
        auto weight = on_meta({11, 5}, type).requires_grad_();
        auto bias = on_meta({11}, type).requires_grad_();
        auto nll = ops::mixture_nll(latent, prior, weight, bias, on_meta({6}, torch::kInt64), 0.0, kappa);
        nll.sum().backward();
        EXPECT_TRUE(nll.is_meta() && latent.grad().is_meta() && weight.grad().is_meta() && bias.grad().is_meta());
      });
    }
  }
}

TEST(DevicePlacementTest, TheTrainingStepsPiecesRunOnMeta) {
  // Dropouts (locked; embedding, whose row mask follows the weight).
  EXPECT_TRUE(locked_dropout(on_meta({5, 3, 4}), 0.3, true).is_meta());
  EXPECT_TRUE(locked_dropout(on_meta({6, 4}), 0.3, true).is_meta());
  // The gradient norm and clipping, and each optimizer's step (ASGD's average swapped in and out),
  // on parameters that live on the device with gradients there.
  for (const std::string kind : {"sgd", "asgd", "adam"}) {
    SCOPED_TRACE(kind);
    std::vector<torch::Tensor> params{on_meta({4, 3}).requires_grad_(), on_meta({5}).requires_grad_()};
    training::Optimizer optimizer(kind, {{"main", params, 1.0, 1e-6}});
    for (int step = 0; step < 2; ++step) {
      for (auto& p : params) p.mutable_grad() = on_meta(p.sizes());
      const auto norm = training::gradient_norm(params);
      EXPECT_TRUE(norm.is_meta());
      EXPECT_EQ(norm.scalar_type(), torch::kFloat64);
      training::scale_gradients(params, 0.5);
      optimizer.step();
    }
    if (optimizer.averages()) {
      optimizer.swap_with_average();
      optimizer.swap_with_average();
      EXPECT_TRUE(optimizer.average_of(0, 0).is_meta());
    }
    for (const auto& p : params) EXPECT_TRUE(p.is_meta());
    // The trainer's step: squared norms per parameter, the clip coefficient and finiteness as device
    // scalars, the scaling by a scalar tensor, the update gated on the device.
    for (auto& p : params) p.mutable_grad() = on_meta(p.sizes());
    torch::Tensor squares;
    const auto norm = training::gradient_norm(params, &squares);
    EXPECT_TRUE(squares.is_meta());
    EXPECT_EQ(squares.size(0), 2);
    const auto coefficient = training::clip_coefficient(norm, 0.25);
    EXPECT_TRUE(coefficient.is_meta());
    training::scale_gradients(params, coefficient);
    auto proceed = training::all_finite(torch::stack({norm, norm}));
    proceed = proceed.bitwise_and(training::all_finite(norm));  // the trainer's running flag
    EXPECT_TRUE(proceed.is_meta());
    // ASGD's gated average selects (where), which has no meta kernel in Torch 1.13.
    run_on_meta(kind + " gated step", kModernTorch || kind != "asgd", [&] { optimizer.step(proceed); });
    // ASGD's η, μ and count on the device (what a CUDA graph's step reads): nothing read back.
    optimizer.keep_scalars_on_device();
    run_on_meta(kind + " gated step, scalars on the device", kModernTorch || kind != "asgd", [&] {
      for (auto& p : params) p.mutable_grad() = on_meta(p.sizes());
      optimizer.step(proceed);
    });
    for (const auto& p : params) EXPECT_TRUE(p.is_meta());
  }
  // The hidden-state carry.
  EncoderState state{{on_meta({1, 2, 3}).requires_grad_(), on_meta({1, 2, 3})}};
  const auto carried = detach_state(state);
  EXPECT_TRUE(carried[0][0].is_meta() && !carried[0][0].requires_grad());
}

}  // namespace
}  // namespace lmkit
