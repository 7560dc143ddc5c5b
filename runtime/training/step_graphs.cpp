#include "runtime/training/step_graphs.h"

#include <mutex>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/host_read.h"

namespace lmkit::training {

namespace {

// A step's key in messages: its window's shape, the key's first word (the rest is rates and places).
std::string step_name(const std::string& key) { return "the step of a " + key.substr(0, key.find(' ')) + " window"; }

}  // namespace

StepGraphs::StepGraphs(std::string mode) : mode_(std::move(mode)) {}

bool StepGraphs::seen_before(const std::string& key) { return !seen_.insert(key).second; }

void StepGraphs::capture(const std::string& key, const torch::Device& device, const std::function<void()>& work) {
  if (!refused_.empty()) throw std::logic_error("StepGraphs::capture: captures were refused in this run");
  if (rehearsing()) {
    // Nothing runs at a capture, as on a GPU; each replay runs the function again.
    rehearsed_.insert_or_assign(key, Rehearsal{work, device});
  } else {
    try {
      cuda_.capture(key, device, work);
    } catch (const ops::CaptureRefused& e) {
      // The earlier graphs went with the failed capture (ops::CudaGraphs::capture): none is kept.
      release();
      throw ops::CaptureRefused(step_name(key) + ": " + e.what());
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
    auto& rehearsal = rehearsed_.at(key);
    if (rehearsal.tried) {
      rehearsal.work();
    } else {
      // The capture's trial. A read to the host is refused, as a capture refuses it; the draws the
      // step made so far are taken back, as a refused capture makes none (ops/cuda_graphs.h). A
      // step that wrote its state or weights before the read is stopped by the trainer's rehearsal
      // (trainer_step_graphs.cpp): that a rehearsal cannot take back.
      auto generator = at::globalContext().defaultGenerator(rehearsal.device);
      torch::Tensor generator_state;
      {
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator_state = generator.get_state();
      }
      try {
        HostReadsRefused no_reads("a CUDA graph's capture");
        rehearsal.work();
      } catch (const HostReadRefused& e) {
        {
          std::lock_guard<std::mutex> lock(generator.mutex());
          generator.set_state(generator_state);
        }
        // As a failed capture on a GPU: nothing kept (ops::CudaGraphs::capture).
        --captures_;
        release();
        throw ops::CaptureRefused(step_name(key) + ": CUDA graph capture failed (rehearsed): " + e.what());
      }
      rehearsal.tried = true;
    }
  } else {
    cuda_.replay(key);
  }
  ++replays_;
}

void StepGraphs::refuse(const std::string& why) {
  release();
  refused_ = why;
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
