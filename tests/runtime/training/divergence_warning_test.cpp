// The warning for a training loss far above the uniform model's (runtime/training/divergence_warning.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/training/divergence_warning.h"

namespace lmkit::training {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(DivergenceWarningTest, ALossNearTheUniformModelsIsNoWarning) {
  TrainOptions o;
  const double uniform = std::log(10000.0);
  EXPECT_EQ(divergence_warning(5.0, 10000, "epoch 1", o, false), "");
  EXPECT_EQ(divergence_warning(uniform + 1.0, 10000, "epoch 1", o, false), "");  // worse than uniform, not by 100x
  EXPECT_EQ(divergence_warning(uniform + kDivergenceMarginNats - 1e-9, 10000, "epoch 1", o, false), "");
}

TEST(DivergenceWarningTest, APerplexityHundredsOfTimesTheVocabularyIsNamedWithTheWaysOut) {
  TrainOptions o;
  o.lr = 20;
  o.clip = 0.25;
  // The new user's run: train ppl 6.4e17 on a vocabulary of 10,000.
  const auto text = divergence_warning(std::log(6.4e17), 10000, "epoch 3", o, false);
  EXPECT_TRUE(contains(text, "epoch 3 train ppl 6.4e+17")) << text;
  EXPECT_TRUE(contains(text, "uniform model's (10000")) << text;
  EXPECT_TRUE(contains(text, "lr = 10, half of 20")) << text;
  EXPECT_TRUE(contains(text, "clip = 0.125, now 0.25")) << text;
  EXPECT_FALSE(contains(text, "own_lr")) << text;
  // Just past the margin: a warning.
  EXPECT_NE(divergence_warning(std::log(10000.0) + kDivergenceMarginNats + 1e-6, 10000, "epoch 1", o, false), "");
}

TEST(DivergenceWarningTest, TheWaysOutFollowTheRunsOwnSettings) {
  TrainOptions o;
  o.clip = 0;
  o.own_lr = 0.5;
  const auto text = divergence_warning(1e3, 50, "finetune epoch 2", o, true);
  EXPECT_TRUE(contains(text, "finetune epoch 2")) << text;
  EXPECT_TRUE(contains(text, "gradient clipping (clip = 0.25; it is off)")) << text;
  EXPECT_TRUE(contains(text, "own_lr = 0.05")) << text;
}

TEST(DivergenceWarningTest, AnInfiniteLossIsAWarningAndAnEpochWithoutStepsNone) {
  TrainOptions o;
  EXPECT_TRUE(contains(divergence_warning(std::numeric_limits<double>::infinity(), 100, "epoch 1", o, false), "train ppl inf"));
  EXPECT_EQ(divergence_warning(std::nan(""), 100, "epoch 1", o, false), "");  // the mean of no steps
}

}  // namespace
}  // namespace lmkit::training
