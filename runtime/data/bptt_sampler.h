// The training order of AWD-LSTM (main.py train()): variable-length BPTT windows over a batchified
// stream, with the learning rate scaled by the window length.
//
// Each step draws
//   bptt' = bptt with probability p_full (0.95), else bptt / 2
//   seq_len = min(max(min_len, ⌊N(bptt', sd²)⌋ toward zero), bptt + max_delta)   (min_len 5, sd 5)
// returns get_batch(source, i, seq_len) with lr_scale = seq_len / bptt (the drawn length, as the
// reference does, even when the last batch is cut short), and advances i by seq_len. An epoch ends
// when i ≥ nbatch − 2. The cap bptt + max_delta (default 40, the MoS code's max_seq_len_delta and
// the thesis's code's) guards against rare very long windows; AWD-LSTM has it commented out.
//
// All randomness comes from the sampler's own mt19937_64 (uniforms from 53 bits, normals by
// Box–Muller using both uniforms per draw, nothing cached), so state() captures everything: restoring
// it mid-epoch replays the rest of the epoch exactly.
#pragma once
#include <cstdint>
#include <random>
#include <string>

#include "runtime/config/bound_options.h"
#include "runtime/data/batching.h"

namespace lmkit::data {

struct BpttSamplerOptions {
  std::int64_t bptt = 70;
  double p_full = 0.95;
  double sd = 5.0;
  std::int64_t min_len = 5;
  std::int64_t max_delta = 40;
  std::uint64_t seed = 0;
};
const config::BoundOptions<BpttSamplerOptions>& declared_options(config::Tag<BpttSamplerOptions>);

class BpttSampler {
 public:
  // `source` is batchified: [nbatch, bsz]. Throws UsageError for invalid options.
  BpttSampler(torch::Tensor source, BpttSamplerOptions options);

  // The next window length (consumes randomness; next() calls it).
  std::int64_t draw_length();
  // Fills `batch`; false at the end of an epoch, after which the next call starts the next epoch.
  bool next(Batch& batch);
  // The next window, or nullopt at the end of an epoch (as next).
  std::optional<Batch> next_window();

  // Everything needed to resume: the generator, the position and the epoch count, as text.
  std::string state() const;
  // Restores a state() string; throws UsageError when it is not one.
  BpttSampler& set_state(const std::string& state);

  std::int64_t position() const { return position_; }
  std::int64_t epoch() const { return epoch_; }  // completed epochs
  const BpttSamplerOptions& options() const { return options_; }
  const torch::Tensor& source() const { return source_; }

 private:
  double uniform();
  double normal(double mean, double sd);

  torch::Tensor source_;
  BpttSamplerOptions options_;
  std::mt19937_64 engine_;
  std::int64_t position_ = 0;
  std::int64_t epoch_ = 0;
};

// A sampler as one request (lmkit.data.bptt_sampler): the batchified data and the options.
struct BpttSamplerRequest {
  torch::Tensor data;
  BpttSamplerOptions options;
};
const config::BoundOptions<BpttSamplerRequest>& declared_options(config::Tag<BpttSamplerRequest>);
std::shared_ptr<BpttSampler> make_bptt_sampler(const BpttSamplerRequest& request);

}  // namespace lmkit::data
