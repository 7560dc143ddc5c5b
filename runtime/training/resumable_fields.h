// The fields of a run's resume state, each declared once — its key in state.ckpt and the variable it
// lives in — so that saving and loading come from the same list and a new resumable field is
// written in one place. A part of the trainer's state declares its own fields
// (runtime/training/run_progress.h); the trainer adds those of its objects (sampler, optimizer, ...).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::training {

class ResumableFields {
 public:
  using json = nlohmann::json;

  ResumableFields& add(const char* key, std::int64_t& field);
  ResumableFields& add(const char* key, bool& field);
  ResumableFields& add(const char* key, std::string& field);
  ResumableFields& add(const char* key, std::vector<double>& field);
  ResumableFields& add(const char* key, std::optional<std::int64_t>& field);  // null when empty
  // A double that may not be finite (an infinite best loss before the first, a NaN train loss
  // before the first epoch): JSON has no such numbers, so it is stored as null and read back as
  // `when_null`.
  ResumableFields& add(const char* key, double& field, double when_null);
  // A field saved from and loaded into something else (an object's state, a clock).
  ResumableFields& add(const char* key, std::function<json()> save, std::function<void(const json&)> load);
  // Fields that states written by earlier versions lack: a missing key loads `absent` instead.
  ResumableFields& optional(const json& absent);

  json save() const;
  // Loads every field, in declaration order. A missing or mistyped key is a UsageError naming
  // `source` (the state file) and the key.
  void load(const json& state, const std::string& source) const;
  std::vector<std::string> keys() const;

 private:
  struct Field {
    std::string key;
    std::function<json()> save;
    std::function<void(const json&)> load;
    std::optional<json> absent;
  };
  std::vector<Field> fields_;
};

}  // namespace lmkit::training
