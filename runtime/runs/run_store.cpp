#include "runtime/runs/run_store.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "runtime/config/json_text.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::training {
namespace {

// What a run's files can hold: config.json and summary.json are kilobytes; metrics.jsonl grows by
// ~300 bytes per log interval and epoch (a 1,000-epoch PTB run: ~1 MB at log_interval 200, ~200 MB
// at 1). The bounds keep a damaged or hostile file from taking the machine's memory (parsed, a
// metrics file takes ~8 times its size).
constexpr std::uintmax_t kMaxJsonBytes = std::uintmax_t{64} << 20;
constexpr std::uintmax_t kMaxMetricsBytes = std::uintmax_t{512} << 20;
// One record is a few hundred bytes (an epoch's with a long stop reason: a few kilobytes).
constexpr std::size_t kMaxMetricsLineBytes = std::size_t{1} << 20;

}  // namespace

RunStore::RunStore(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_)) {
    throw EnvironmentError("cannot create run directory '" + dir_.string() + "': " +
                           (ec ? ec.message() : std::string("a file of that name is in the way")));
  }
}

void RunStore::write_json(const std::string& name, const nlohmann::json& value) const {
  write_file_atomically(path(name), config::dump_json(value, 2) + "\n");
}

nlohmann::json RunStore::read_json(const std::string& name) const {
  const auto text = read_file(path(name), "run file", kMaxJsonBytes);
  nlohmann::json value;
  try {
    value = config::parse_json_text(text);
  } catch (const config::JsonTextError& e) {
    throw EnvironmentError("run file '" + path(name) + "' is not valid JSON: " + e.what());
  }
  // Every JSON file of a run is an object (config.json, summary.json): anything else was written
  // by something other than lmkit, and its fields would read as missing.
  if (!value.is_object()) {
    throw EnvironmentError("run file '" + path(name) + "' must hold a JSON object, got " +
                           std::string(value.type_name()) + "; it was not written by lmkit (restore or delete it)");
  }
  return value;
}

void RunStore::append_line(const std::string& name, const std::string& line) const {
  const std::string file = path(name);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw EnvironmentError("cannot append to '" + file + "': " + std::strerror(errno));
  const std::string text = line + "\n";
  std::size_t written = 0;
  while (written < text.size()) {  // one write() per line in practice; O_APPEND keeps lines whole
    const auto n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      throw EnvironmentError("appending to '" + file + "' failed: " + reason);
    }
    written += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

void RunStore::append_metric(const nlohmann::json& record) const { append_line("metrics.jsonl", config::dump_json(record)); }

void RunStore::append_log(const std::string& line) const { append_line("log.txt", line); }

std::vector<nlohmann::json> RunStore::metrics() const {
  std::vector<nlohmann::json> records;
  if (!exists("metrics.jsonl")) return records;
  const auto text = read_file(path("metrics.jsonl"), "metrics file", kMaxMetricsBytes);
  std::size_t start = 0;
  std::size_t line_number = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    if (end == std::string::npos) break;  // a line cut short by a crash: not a record
    ++line_number;
    try {
      records.push_back(config::parse_json_text(text.substr(start, end - start)));
    } catch (const config::JsonTextError& e) {
      throw EnvironmentError("metrics file '" + path("metrics.jsonl") + "' line " + integer_text(line_number) +
                             " is not JSON: " + e.what());
    }
    start = end + 1;
  }
  return records;
}

RunStore::MetricsReading RunStore::read_metrics(
    const std::function<void(std::size_t line, const nlohmann::json& record)>& visit) const {
  MetricsReading reading;
  const auto file = path("metrics.jsonl");
  std::error_code error;
  const auto status = std::filesystem::status(file, error);
  if (!std::filesystem::exists(status)) return reading;
  // A device never ends and a FIFO blocks: only a regular file is read (as read_file refuses them).
  if (!std::filesystem::is_regular_file(status)) {
    throw EnvironmentError("cannot read metrics file '" + file + "': it is not a regular file (a device, a pipe or a socket)");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw EnvironmentError("cannot open metrics file '" + file + "': " + std::strerror(errno));
  reading.exists = true;
  std::string line;
  std::size_t number = 0;
  std::vector<char> chunk(std::size_t{1} << 16);
  bool too_long = false;
  const auto take_line = [&]() -> bool {
    ++number;
    // A blank line (an editor's trailing newline) is no record and no damage.
    if (!too_long && line.find_first_not_of(" \t\r") == std::string::npos) return true;
    if (too_long) {
      reading.bad_line = "line " + integer_text(number) + " is longer than " + integer_text(kMaxMetricsLineBytes >> 20) +
                         " MiB, far more than any record lmkit writes";
      return false;
    }
    nlohmann::json record;
    try {
      record = config::parse_json_text(line);
    } catch (const config::JsonTextError& e) {
      reading.bad_line = "line " + integer_text(number) + " is not JSON: " + std::string(e.what());
      return false;
    }
    if (!record.is_object()) {
      reading.bad_line = "line " + integer_text(number) + " is not a JSON object";
      return false;
    }
    ++reading.records;
    visit(number, record);
    return true;
  };
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    std::size_t start = 0;
    while (start < got) {
      const auto* end = static_cast<const char*>(std::memchr(chunk.data() + start, '\n', got - start));
      const std::size_t stop = end ? static_cast<std::size_t>(end - chunk.data()) : got;
      if (!too_long) {
        if (line.size() + (stop - start) > kMaxMetricsLineBytes) {
          too_long = true;
          line.clear();
          line.shrink_to_fit();
        } else {
          line.append(chunk.data() + start, stop - start);
        }
      }
      if (!end) break;
      if (!take_line()) return reading;
      line.clear();
      too_long = false;
      start = stop + 1;
    }
  }
  if (!line.empty() || too_long) reading.cut_last_line = true;
  return reading;
}

void RunStore::truncate_metrics(std::size_t count) const {
  const auto records = metrics();
  std::string text;
  for (std::size_t i = 0; i < count && i < records.size(); ++i) text += config::dump_json(records[i]) + "\n";
  write_file_atomically(path("metrics.jsonl"), text);
}

bool is_record_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace lmkit::training
