#include "runtime/data/bptt_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::data {
namespace {
constexpr const char* kStateTag = "lmkit.bptt_sampler.v1";
}

BpttSampler::BpttSampler(torch::Tensor source, BpttSamplerOptions options)
    : source_(std::move(source)), options_(options), engine_(options.seed) {
  if (source_.dim() != 2 || source_.size(0) < 2) {
    throw UsageError("the sampler needs a batchified [nbatch, bsz] tensor with nbatch ≥ 2, got size " +
                     format_shape(source_.sizes()));
  }
  if (options_.bptt <= 0) throw UsageError("bptt must be positive, got " + integer_text(options_.bptt));
  if (!(options_.p_full >= 0 && options_.p_full <= 1)) throw UsageError("p_full must be in [0, 1]");
  if (!(options_.sd >= 0 && std::isfinite(options_.sd))) throw UsageError("sd must be finite and non-negative");
  if (options_.min_len <= 0) throw UsageError("min_len must be positive");
  if (options_.max_delta < 0) throw UsageError("max_delta must be non-negative");
  // Compared as a difference: bptt + max_delta overflows int64 for sizes near 2^63.
  if (options_.max_delta > std::numeric_limits<std::int64_t>::max() - options_.bptt) {
    throw UsageError("bptt + max_delta must fit in 64 bits, got bptt " + integer_text(options_.bptt) +
                     " and max_delta " + integer_text(options_.max_delta));
  }
  if (options_.bptt + options_.max_delta < options_.min_len) {
    throw UsageError("bptt + max_delta must be at least min_len");
  }
}

double BpttSampler::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

double BpttSampler::normal(double mean, double sd) {
  const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
  const double u2 = uniform();
  return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::int64_t BpttSampler::draw_length() {
  const double bptt = static_cast<double>(options_.bptt);
  const double base = uniform() < options_.p_full ? bptt : bptt / 2.0;
  const double drawn = std::trunc(normal(base, options_.sd));  // Python's int()
  // Clamped before the conversion: a double at or beyond 2^63 has no int64 value.
  const std::int64_t longest = options_.bptt + options_.max_delta;
  if (drawn >= static_cast<double>(longest)) return longest;
  return std::max(options_.min_len, static_cast<std::int64_t>(std::max(drawn, 0.0)));
}

bool BpttSampler::next(Batch& batch) {
  if (position_ >= source_.size(0) - 2) {
    position_ = 0;
    ++epoch_;
    return false;
  }
  const std::int64_t len = draw_length();
  batch = get_batch(source_, position_, len);
  batch.lr_scale = static_cast<double>(len) / static_cast<double>(options_.bptt);
  // A window may be drawn longer than the rest of the data (it ends the epoch): stopping at the
  // end keeps position_ + len from overflowing for lengths near 2^63.
  position_ += std::min(len, source_.size(0) - position_);
  return true;
}

std::string BpttSampler::state() const {
  std::ostringstream out;
  out << kStateTag << ' ' << position_ << ' ' << epoch_ << ' ' << engine_;
  return out.str();
}

BpttSampler& BpttSampler::set_state(const std::string& state) {
  std::istringstream in(state);
  std::string tag;
  std::int64_t position = 0, epoch = 0;
  std::mt19937_64 engine;
  in >> tag >> position >> epoch >> engine;
  if (in.fail() || tag != kStateTag || position < 0 || epoch < 0) {
    throw UsageError("not a sampler state (expected the string returned by sampler:state())");
  }
  position_ = position;
  epoch_ = epoch;
  engine_ = engine;
  return *this;
}

std::optional<Batch> BpttSampler::next_window() {
  Batch batch;
  if (!next(batch)) return std::nullopt;
  return batch;
}

const config::BoundOptions<BpttSamplerOptions>& declared_options(config::Tag<BpttSamplerOptions>) {
  using O = BpttSamplerOptions;
  using config::Range;
  static const config::BoundOptions<O> options(
      "bptt_sampler", {{"bptt", &O::bptt, Range::at_least(1), "the mean window length"},
                       {"seed", &O::seed, Range::non_negative(), "the sampler's own generator's seed"},
                       {"p_full", &O::p_full, Range{0.0, 1.0}, "the probability of bptt (else bptt/2)"},
                       {"sd", &O::sd, Range::non_negative(), "the window length's standard deviation"},
                       {"min_len", &O::min_len, Range::at_least(1), "the shortest window"},
                       {"max_delta", &O::max_delta, "windows are at most bptt + max_delta long"}});
  return options;
}

const config::BoundOptions<BpttSamplerRequest>& declared_options(config::Tag<BpttSamplerRequest>) {
  static const config::BoundOptions<BpttSamplerRequest> options("bptt_sampler", [] {
    std::vector<config::BoundOption<BpttSamplerRequest>> list;
    list.push_back(config::BoundOption<BpttSamplerRequest>("data", &BpttSamplerRequest::data,
                                                           "the batchified stream (lmkit.data.batchify)")
                       .required());
    for (auto& option : config::lifted(&BpttSamplerRequest::options)) list.push_back(std::move(option));
    return list;
  }());
  return options;
}

std::shared_ptr<BpttSampler> make_bptt_sampler(const BpttSamplerRequest& request) {
  return std::make_shared<BpttSampler>(request.data, request.options);
}

}  // namespace lmkit::data
