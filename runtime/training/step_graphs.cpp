#include "runtime/training/step_graphs.h"

#include <utility>

#include "runtime/core/error.h"

namespace lmkit::training {

StepGraphs::StepGraphs(std::string mode) : mode_(std::move(mode)) {}

bool StepGraphs::seen_before(const std::string& key) { return !seen_.insert(key).second; }

void StepGraphs::capture(const std::string& key, const torch::Device& device, const std::function<void()>& work) {
  if (rehearsing()) {
    // Nothing runs at a capture, as on a GPU; each replay runs the function again.
    rehearsed_[key] = work;
  } else {
    try {
      cuda_.capture(key, device, work);
    } catch (...) {
      graphs_.erase(key);
      throw;
    }
  }
  captured_.insert(key);
  ++captures_;
}

void StepGraphs::replay(const std::string& key) {
  if (rehearsing()) {
    rehearsed_.at(key)();
  } else {
    cuda_.replay(key);
  }
  ++replays_;
}

void StepGraphs::release() {
  cuda_.clear();
  rehearsed_.clear();
  graphs_.clear();
  captured_.clear();
  seen_.clear();
  state_.clear();
}

void StepGraphs::serve(std::uint64_t optimizer_id) {
  if (optimizer_id == served_) return;
  release();
  served_ = optimizer_id;
}

std::vector<EncoderState>& StepGraphs::static_state(const std::vector<EncoderState>& like) {
  if (state_.size() != like.size()) {
    torch::NoGradGuard no_grad;
    state_.clear();
    for (const auto& chunk : like) {
      EncoderState copy;
      for (const auto& part : chunk) {
        std::vector<torch::Tensor> tensors;
        for (const auto& t : part) tensors.push_back(t.defined() ? t.detach().clone() : t);
        copy.push_back(std::move(tensors));
      }
      state_.push_back(std::move(copy));
    }
  }
  return state_;
}

void copy_state_into(std::vector<std::vector<torch::Tensor>>& to, const std::vector<std::vector<torch::Tensor>>& from) {
  torch::NoGradGuard no_grad;
  if (to.size() != from.size()) throw std::logic_error("copy_state_into: states of different structure");
  for (std::size_t i = 0; i < to.size(); ++i) {
    if (to[i].size() != from[i].size()) throw std::logic_error("copy_state_into: states of different structure");
    for (std::size_t j = 0; j < to[i].size(); ++j) {
      if (to[i][j].defined() && to[i][j].data_ptr() != from[i][j].data_ptr()) to[i][j].copy_(from[i][j]);
    }
  }
}

bool same_state(const EncoderState& a, const EncoderState& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (std::size_t j = 0; j < a[i].size(); ++j) {
      if (a[i][j].defined() != b[i][j].defined()) return false;
      if (a[i][j].defined() && !a[i][j].is_same(b[i][j])) return false;
    }
  }
  return true;
}

}  // namespace lmkit::training
