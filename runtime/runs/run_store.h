// A run's directory: everything a training run leaves behind, in files a person or a script can
// read without lmkit.
//
//   config.json     the fully resolved configuration (model, corpus, training options) and the
//                   run's id (made at creation; state.ckpt carries it too)
//   metrics.jsonl   one JSON object per line: {"type": "step", ...} per log interval and
//                   {"type": "epoch", ...} per epoch (see docs/training.md)
//   best.ckpt       the model with the best validation loss (lmkit.load reads it)
//   last.ckpt       the model at the end of the latest epoch
//   state.ckpt      everything resume needs (model, optimizer, averages, RNGs, sampler, hidden state)
//   summary.json    the final numbers (written when the run ends, however it ends)
//   log.txt         the log lines printed during the run
// JSON files and checkpoints are replaced atomically. metrics.jsonl and log.txt grow by appending
// whole lines; a line cut short by a crash is ignored when reading, and resume truncates the
// metrics back to the state it restores, so they continue step for step.
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::training {

class RunStore {
 public:
  // Creates the directory (and parents) if needed; EnvironmentError naming it otherwise.
  explicit RunStore(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return dir_; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  bool exists(const std::string& name) const { return std::filesystem::exists(dir_ / name); }

  void write_json(const std::string& name, const nlohmann::json& value) const;
  // EnvironmentError naming the file when missing, not JSON, or not a JSON object.
  nlohmann::json read_json(const std::string& name) const;

  void append_metric(const nlohmann::json& record) const;
  std::vector<nlohmann::json> metrics() const;

  // metrics.jsonl read line by line in bounded memory, whatever its size (`lmkit status`, `compare`
  // and `report` of a run): `visit` gets each record (a JSON object) and its line number. Reading
  // stops at the first line that is no record (not JSON, not an object, or longer than any record
  // lmkit writes): `bad_line` says which and why. A last line without its newline (a writer stopped
  // mid-line, or one writing now) is no record either: `cut_last_line`.
  struct MetricsReading {
    bool exists = false;
    std::size_t records = 0;
    bool cut_last_line = false;
    std::optional<std::string> bad_line;  // "line 12 is not JSON: ..."
  };
  MetricsReading read_metrics(const std::function<void(std::size_t line, const nlohmann::json& record)>& visit) const;
  // Keeps the first `count` complete records (resume); atomic.
  void truncate_metrics(std::size_t count) const;

  void append_log(const std::string& line) const;

 private:
  void append_line(const std::string& name, const std::string& line) const;
  std::filesystem::path dir_;
};

// Whether `name` may name a number in a run's records (run:record, lmkit compare --metric): letters,
// digits and _, not starting with a digit, at most 64 characters.
bool is_record_name(const std::string& name);

}  // namespace lmkit::training
