// The trainer's steps as CUDA graphs (step_graphs.h): which steps qualify, the key of a step's
// shape, and the step through its graph.
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

#include "runtime/core/host_read.h"
#include "runtime/core/number_text.h"
#include "runtime/training/trainer_state.h"

namespace lmkit::training {

std::string Trainer::State::graph_obstacles(const std::string& optimizer_kind) const {
  if (!graphs) return "cuda_graphs = \"off\"";
  std::vector<std::string> obstacles;
  if (!graphs->refused().empty()) {
    obstacles.push_back("a capture was refused: " + graphs->refused());
  } else if (!graphs->rehearsing()) {
    if (const auto why = ops::cuda_graphs_unsupported(device); !why.empty()) obstacles.push_back(why);
  }
  // SGD's rate is fixed for a shape (it is in the key); ASGD's η, μ and count live on the device.
  if (optimizer_kind != "sgd" && optimizer_kind != "asgd") {
    obstacles.push_back("the optimizer is " + optimizer_kind + ", whose bias corrections change every step");
  }
  // A constant rate (schedule "constant" without a warm-up) is no obstacle.
  if ((options.schedule && *options.schedule != "constant") || (options.warmup && *options.warmup > 0)) {
    obstacles.push_back("an lr schedule or warm-up changes the rate every step");
  }
  const auto head = model->head->kind();
  if (head == "pointwise" || head == "custom") {
    obstacles.push_back("the head is written in Lua, and a captured step would run its function once, at the capture");
  }
  std::string text;
  for (const auto& why : obstacles) text += (text.empty() ? "" : "; ") + why;
  return text;
}

std::string Trainer::State::graph_disqualifier() const { return graph_obstacles(optimizer->kind()); }

std::string Trainer::State::graph_key(const data::Batch& window) const {
  if (!graphs || !graph_disqualifier().empty()) return "";
  // Everything the host hands the step's launches: the window's shape, each group's rate (scaled
  // for this window), and where every parameter and gradient lives and whether it trains.
  std::string key = integer_text(window.input.size(0)) + "x" + integer_text(window.input.size(1));
  char number[64];
  for (const auto& group : optimizer->groups()) {
    std::snprintf(number, sizeof number, " %a/%a", group.lr, group.weight_decay);
    key += number;
  }
  // (The optimizer is not in the key: a replaced one's graphs are released, StepGraphs::serve.)
  for (const auto& p : params) {
    std::snprintf(number, sizeof number, " %p:%p:%d", p.data_ptr(), p.grad().defined() ? p.grad().data_ptr() : nullptr,
                  p.requires_grad() ? 1 : 0);
    key += number;
  }
  return key;
}

torch::Tensor Trainer::State::graphed_step(const std::string& key, const data::Batch& window) {
  auto& g = *graphs;
  // Before any capture: what ASGD's step reads at each replay lives on the device from here on.
  optimizer->keep_scalars_on_device();
  if (!g.captured(key) && (!g.seen_before(key) || g.full() || !optimizer->every_stepping_slot_started())) {
    // The first time this shape comes (or when no more graphs are kept, or a parameter's first
    // step would make its optimizer state inside the capture): eagerly.
    return launch_step(window.input, window.target, /*state_in_place=*/false);
  }
  // The carried state into the static state every graph reads and writes.
  auto& state = g.static_state(hidden);
  for (std::size_t c = 0; c < hidden.size(); ++c) {
    if (!same_state(hidden[c], state[c])) {
      copy_state_into(state[c], hidden[c]);
      hidden[c] = state[c];
    }
    // A graph reads and writes the tensors it was captured with (a rehearsal, whatever hidden holds
    // when it runs): both must be the static state.
    if (!same_state(hidden[c], state[c])) throw std::logic_error("graphed_step: the carried state is not the static state");
  }
  auto& graph = g.graph(key);
  if (!graph.input.defined()) {
    graph.input = torch::empty_like(window.input);
    graph.target = torch::empty_like(window.target);
  }
  graph.input.copy_(window.input);
  graph.target.copy_(window.target);
  // The optimizer's host numbers (step counts, ASGD's η and μ) move on by one step, whether its
  // host code ran (a capture, a rehearsal) or not (a replay).
  const auto before_step = optimizer->host_scalars();
  const bool capturing = !g.captured(key);
  std::function<void()> work;
  if (capturing) {
    work = [this, &graph] { graph.values = launch_step(graph.input, graph.target, /*state_in_place=*/true); };
    if (g.rehearsing()) {
      // What a capture bakes into a graph, a rehearsal holds fixed too: the rates and the
      // optimizer's host numbers as they were at the capture, the optimizer and the gate tensor it
      // was captured with. A step that read a host number which changes between its replays
      // gives other bits than the eager run.
      std::vector<double> rates;
      for (const auto& group : optimizer->groups()) rates.push_back(group.lr);
      // What a step writes in place — the weights, the carried state, the gate —, as the tensors
      // they are before it (a step may put other tensors in `hidden`), and their version counters.
      const auto written_tensors = [this] {
        std::vector<torch::Tensor> tensors(params.begin(), params.end());
        for (const auto& chunk : hidden) {
          for (const auto& part : chunk) {
            for (const auto& t : part) {
              if (t.defined()) tensors.push_back(t);
            }
          }
        }
        if (proceed.defined()) tensors.push_back(proceed);
        return tensors;
      };
      const auto versions_of = [](const std::vector<torch::Tensor>& tensors) {
        std::vector<std::int64_t> versions;
        for (const auto& t : tensors) versions.push_back(t._version());
        return versions;
      };
      work = [this, work, rates, written_tensors, versions_of, at_capture = before_step, captured_with = optimizer->id(),
              gate = proceed] {
        if (optimizer->id() != captured_with || !proceed.is_same(gate)) {
          throw std::logic_error("rehearsed step: the optimizer or the gate tensor was replaced since its capture");
        }
        auto& groups = optimizer->groups();
        std::vector<double> now;
        for (std::size_t i = 0; i < groups.size(); ++i) now.push_back(std::exchange(groups[i].lr, rates.at(i)));
        const auto scalars_now = optimizer->host_scalars();
        optimizer->set_host_scalars(at_capture);
        // Put back whether the step ends or throws.
        struct Restore {
          Optimizer& optimizer;
          const std::vector<double>& lrs;
          const Optimizer::HostScalars& scalars;
          ~Restore() {
            optimizer.set_host_scalars(scalars);
            for (std::size_t i = 0; i < lrs.size(); ++i) optimizer.groups()[i].lr = lrs[i];
          }
        } restore{*optimizer, now, scalars_now};
        // A rehearsal takes back a refused step's draws, not its writes (StepGraphs::replay): a
        // read after the step wrote its carried state, the gate or a weight cannot be rehearsed.
        const auto tensors = written_tensors();
        const auto versions = versions_of(tensors);
        try {
          work();
        } catch (const HostReadRefused& e) {
          if (versions_of(tensors) == versions) throw;
          throw EnvironmentError(std::string("cuda_graphs = \"rehearse\": ") + e.what() +
                                 ", and the step had already written its carried state or weights, which a rehearsal "
                                 "cannot take back as a refused capture on a GPU does (there, \"auto\" launches the step "
                                 "eagerly)");
        }
      };
    }
  }
  try {
    if (capturing) g.capture(key, device, work);
    // (A rehearsal's capture is tried at its first replay.)
    g.replay(key);
  } catch (const ops::CaptureRefused& e) {
    if (!capturing) throw;
    // None of the step ran, and what the capture changed is put back (ops/cuda_graphs.h).
    optimizer->set_host_scalars(before_step);
    if (g.mode() == "on") {
      throw EnvironmentError(std::string(e.what()) + ". This step cannot be captured as a CUDA graph, and " +
                             "cuda_graphs = \"on\" requires it; " + kept_checkpoints() +
                             " Run it again with cuda_graphs = \"auto\" or \"off\" (it resumes from there)");
    }
    g.refuse(e.what());
    log("warning: CUDA graphs off for the rest of this run, each step launched on its own: " + std::string(e.what()) +
        " (cuda_graphs = \"off\" skips the attempt)");
    return launch_step(window.input, window.target, /*state_in_place=*/false);
  } catch (const EnvironmentError& e) {
    if (!capturing) throw;
    // A failed capture whose CUDA state could not be put back (ops/cuda_graphs.h): no CUDA work
    // can go on in this process. The last epoch's files are kept.
    optimizer->set_host_scalars(before_step);
    throw EnvironmentError(std::string(e.what()) + ". " + kept_checkpoints() +
                           " Run it again with cuda_graphs = \"off\" (it resumes from there)");
  }
  optimizer->set_host_scalars(before_step);
  optimizer->count_replayed_step();
  return graph.values;
}

}  // namespace lmkit::training
