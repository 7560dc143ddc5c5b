// The training step as CUDA graphs (TrainOptions::cuda_graphs, issue 37). A step at the paper's
// batch sizes is latency-bound: hundreds of small kernels, each launched by the host, and the GPU
// idle between them. Here each exact step shape — the window's length, the learning rates, the
// parameters and gradients where they are — is captured once, the second time it comes (the first
// runs eagerly: cuDNN's and cuBLAS's plans, the fused kernels' self-checks, the optimizer's first
// step), and replayed from then on: the window copied into the graph's own input and target, the
// carried state into the one static state, then one launch. The random draws continue the default
// generator's sequence as eager launches would, so a replayed step gives the eager step's bits.
//
// A step qualifies when every number it uses on the host is fixed for its shape: SGD, or ASGD with
// its η, μ and step count kept on the device (Optimizer::keep_scalars_on_device; Adam's bias
// corrections change every step), without an lr schedule, on a CUDA device of a build with lmkit's
// CUDA support, with a head written in C++ (a Lua head's function would run once, at capture).
// "rehearse" replays on any device by running the captured step's function again, with the host
// numbers a graph bakes in held at their capture values: a check, on a CPU, that a step reads
// nothing but its static buffers and the device's scalars. A rehearsal's first run of a step is
// where a capture would have been refused: a read of values to the host there (read_to_host) fails
// the "capture" as it fails a real one, and the generator is put back as a refused capture leaves
// it; a read after the step wrote its carried state, gate or weights stops the run instead (a
// rehearsal cannot take writes back).
//
// A refused capture: with "on" the run stops; with "auto" (and "rehearse") the step is launched
// eagerly, every graph is released, and the rest of the run launches its steps one by one (refused()
// says why; summary.json's cuda_graphs.eager_because too).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ops/cuda_graphs.h"
#include "runtime/core/torch.h"
#include "runtime/models/encoder.h"

namespace lmkit::training {

// What a captured step reads and writes between replays: tensors made outside the capture.
struct StepGraph {
  torch::Tensor input, target;  // the window, copied in before each replay
  torch::Tensor values;         // [loss, norm, ‖g_p‖²...]: written by each replay
};

class StepGraphs {
 public:
  // mode: "auto", "on" or "rehearse" (the trainer makes none for "off").
  explicit StepGraphs(std::string mode);

  const std::string& mode() const { return mode_; }
  bool rehearsing() const { return mode_ == "rehearse"; }
  // Whether `key` came before (the first time it comes, it is remembered and the step runs eagerly).
  bool seen_before(const std::string& key);
  bool captured(const std::string& key) const { return captured_.count(key) > 0; }
  // Graphs kept at most: beyond it, new shapes run eagerly (random window lengths make ~60).
  bool full() const { return captured_.size() >= kMaxGraphs; }
  StepGraph& graph(const std::string& key) { return graphs_[key]; }

  // Captures `work` (device work only, on the graph's buffers) under `key`; ops::CaptureRefused
  // when the capture fails (then none of the work ran, and no graph is kept: the earlier ones are
  // released too), EnvironmentError when CUDA's state could not be put back after it.
  void capture(const std::string& key, const torch::Device& device, const std::function<void()>& work);
  // Launches the graph. A rehearsal's first replay of a key is its capture's trial: ops::CaptureRefused
  // when the work read values to the host, with the work stopped there and nothing kept under it.
  void replay(const std::string& key);

  // No step of this run is captured any more (a capture was refused: `why`); every graph is released.
  void refuse(const std::string& why);
  const std::string& refused() const { return refused_; }

  // The state every graph reads and writes: made from the first state handed in, by copy.
  std::vector<EncoderState>& static_state(const std::vector<EncoderState>& like);

  // Releases the graphs and their buffers (once no step of the run can be one again).
  void release();
  // The graphs are of one optimizer's steps: those of another (replaced at the switch to ASGD, at
  // finetuning) are released, since no step replays them again.
  void serve(std::uint64_t optimizer_id);
  bool holds_graphs() const { return !captured_.empty(); }

  std::int64_t captures() const { return captures_; }
  std::int64_t replays() const { return replays_; }

  static constexpr std::size_t kMaxGraphs = 256;

 private:
  std::string mode_;
  std::set<std::string> seen_, captured_;
  std::map<std::string, StepGraph> graphs_;
  ops::CudaGraphs cuda_;
  struct Rehearsal {
    std::function<void()> work;
    torch::Device device;
    bool tried = false;  // whether its first run, the capture's trial, has passed
  };
  std::map<std::string, Rehearsal> rehearsed_;
  std::string refused_;
  std::vector<EncoderState> state_;
  std::int64_t captures_ = 0, replays_ = 0;
  std::uint64_t served_ = 0;
};

// Copies `from` into `to` in place (the same structure and shapes); nothing is recorded for autograd.
void copy_state_into(std::vector<std::vector<torch::Tensor>>& to, const std::vector<std::vector<torch::Tensor>>& from);
// Whether `a` and `b` are the same tensors (the same storage and place, entry by entry).
bool same_state(const EncoderState& a, const EncoderState& b);

}  // namespace lmkit::training
