// batchify and the evaluation order follow AWD-LSTM; the training sampler's lengths have the
// reference's distribution and its state replays an epoch exactly.
#include "runtime/data/batching.h"

#include <gtest/gtest.h>

#include <cmath>

#include "runtime/core/error.h"
#include "runtime/data/bptt_sampler.h"
#include "runtime/training/train_options.h"

namespace lmkit::data {
namespace {

TEST(BatchingTest, BatchifyMakesContiguousColumnsAndDropsTheTail) {
  const auto tokens = torch::arange(26, torch::kInt64);
  const auto b = batchify(tokens, 4);
  ASSERT_EQ(b.sizes(), (std::vector<std::int64_t>{6, 4}));
  // data.narrow(0, 0, 24).view(4, -1).t(): column j holds tokens [6j, 6j + 6).
  EXPECT_EQ(b[0][1].item<std::int64_t>(), 6);
  EXPECT_EQ(b[5][3].item<std::int64_t>(), 23);
  EXPECT_TRUE(torch::equal(b.select(1, 2), torch::arange(12, 18, torch::kInt64)));
  EXPECT_THROW(batchify(tokens, 0), UsageError);
  EXPECT_THROW(batchify(tokens, 27), UsageError);
  EXPECT_THROW(batchify(b, 2), UsageError);
}

TEST(BatchingTest, TargetsAreInputsShiftedByOne) {
  const auto b = batchify(torch::arange(40, torch::kInt64), 2);  // [20, 2]
  const auto batch = get_batch(b, 3, 5);
  EXPECT_EQ(batch.seq_len, 5);
  EXPECT_TRUE(torch::equal(batch.input + 1, batch.target));
  EXPECT_EQ(get_batch(b, 17, 5).seq_len, 2);  // cut at nbatch − 1 − i
  EXPECT_THROW(get_batch(b, 19, 5), UsageError);
}

TEST(BatchingTest, EvaluationCoversEveryPositionOnceWithAShortLastBatch) {
  const auto b = batchify(torch::arange(2 * 100, torch::kInt64), 2);  // 100 rows
  EvalBatches batches(b, 30);
  EXPECT_EQ(batches.size(), 4);  // range(0, 99, 30): 0, 30, 60, 90
  std::vector<std::int64_t> lengths;
  Batch batch;
  while (batches.next(batch)) lengths.push_back(batch.seq_len);
  EXPECT_EQ(lengths, (std::vector<std::int64_t>{30, 30, 30, 9}));
  batches.reset();
  EXPECT_TRUE(batches.next(batch));
  EXPECT_EQ(batch.position, 0);
}

TEST(BpttSamplerTest, LengthDistributionMatchesTheReference) {
  BpttSamplerOptions o;
  o.bptt = 70;
  o.seed = 141;
  BpttSampler sampler(batchify(torch::arange(1000, torch::kInt64), 10), o);
  const int n = 200000;
  int halved = 0, shortest = 1 << 30, longest = 0;
  double sum_full = 0;
  int n_full = 0;
  for (int i = 0; i < n; ++i) {
    const auto len = sampler.draw_length();
    shortest = std::min<int>(shortest, len);
    longest = std::max<int>(longest, len);
    // N(35, 5) and N(70, 5) never meet: a length below 52 came from a halved draw.
    if (len < 52) {
      ++halved;
    } else {
      sum_full += len;
      ++n_full;
    }
  }
  // Binomial(n, 0.05): 5 standard deviations.
  const double sd = std::sqrt(n * 0.05 * 0.95);
  EXPECT_NEAR(halved, 0.05 * n, 5 * sd);
  // int() truncates toward zero: E⌊N(70, 5)⌋ ≈ 69.5 (the cap at 110 is 8 sd away and never binds here).
  EXPECT_NEAR(sum_full / n_full, 69.5, 0.05);
  EXPECT_GE(shortest, 5);
  EXPECT_LE(longest, 110);
  EXPECT_GE(longest, 85);
}

TEST(BpttSamplerTest, MinimumAndCapApply) {
  BpttSamplerOptions o;
  o.bptt = 6;
  o.sd = 40;
  o.max_delta = 3;
  BpttSampler sampler(batchify(torch::arange(100, torch::kInt64), 2), o);
  bool saw_min = false, saw_max = false;
  for (int i = 0; i < 10000; ++i) {
    const auto len = sampler.draw_length();
    ASSERT_GE(len, 5);
    ASSERT_LE(len, 9);
    saw_min = saw_min || len == 5;
    saw_max = saw_max || len == 9;
  }
  EXPECT_TRUE(saw_min && saw_max);
}

// The reference code (the MoS code's max_seq_len_delta, kept by the thesis's code) caps a window at
// bptt + 40: the default of the sampler and of the training options, and windows reach it.
TEST(BpttSamplerTest, TheDefaultCapIsTheReferencesBpttPlusForty) {
  EXPECT_EQ(BpttSamplerOptions().max_delta, 40);
  EXPECT_EQ(lmkit::training::TrainOptions().max_delta, 40);
  BpttSamplerOptions o;
  o.bptt = 70;
  o.sd = 200;  // wide enough that the cap binds often
  BpttSampler sampler(batchify(torch::arange(1000, torch::kInt64), 2), o);
  std::int64_t longest = 0;
  for (int i = 0; i < 2000; ++i) longest = std::max(longest, sampler.draw_length());
  EXPECT_EQ(longest, 110);
}

TEST(BpttSamplerTest, EpochCoversTheStreamAndScalesTheLearningRate) {
  BpttSamplerOptions o;
  o.bptt = 10;
  o.seed = 7;
  const auto source = batchify(torch::arange(2 * 500, torch::kInt64), 2);
  BpttSampler sampler(source, o);
  Batch batch;
  std::int64_t expected_position = 0;
  int batches = 0;
  while (sampler.next(batch)) {
    EXPECT_EQ(batch.position, expected_position);
    EXPECT_TRUE(torch::equal(batch.input + 1, batch.target));
    EXPECT_GE(batch.lr_scale * 10, static_cast<double>(batch.seq_len) - 1e-9);
    expected_position += static_cast<std::int64_t>(std::llround(batch.lr_scale * 10));
    ++batches;
  }
  EXPECT_GE(expected_position, 500 - 2);
  EXPECT_GT(batches, 30);
  EXPECT_EQ(sampler.epoch(), 1);
  EXPECT_EQ(sampler.position(), 0);
  EXPECT_TRUE(sampler.next(batch)) << "the next epoch starts";
}

TEST(BpttSamplerTest, RestoredStateReplaysTheRestOfTheEpoch) {
  BpttSamplerOptions o;
  o.bptt = 12;
  o.seed = 2024;
  const auto source = batchify(torch::arange(3 * 900, torch::kInt64), 3);
  BpttSampler a(source, o);
  Batch batch;
  for (int i = 0; i < 17; ++i) ASSERT_TRUE(a.next(batch));
  const std::string saved = a.state();
  std::vector<std::pair<std::int64_t, std::int64_t>> rest;
  while (a.next(batch)) rest.emplace_back(batch.position, batch.seq_len);
  for (int i = 0; i < 5; ++i) a.next(batch);  // into the next epoch
  const auto after = a.state();

  BpttSamplerOptions other = o;
  other.seed = 1;  // the state, not the seed, decides
  BpttSampler b(source, other);
  b.set_state(saved);
  std::vector<std::pair<std::int64_t, std::int64_t>> replay;
  while (b.next(batch)) replay.emplace_back(batch.position, batch.seq_len);
  for (int i = 0; i < 5; ++i) b.next(batch);
  EXPECT_EQ(rest, replay);
  EXPECT_EQ(after, b.state());
  EXPECT_THROW(b.set_state("not a state"), UsageError);
}

}  // namespace
}  // namespace lmkit::data
