#include "runtime/training/resumable_fields.h"

#include <cmath>

#include "runtime/core/error.h"

namespace lmkit::training {

namespace {

template <class T>
ResumableFields::json plain(const T& value) {
  return ResumableFields::json(value);
}

}  // namespace

ResumableFields& ResumableFields::add(const char* key, std::int64_t& field) {
  return add(key, [&field] { return plain(field); }, [&field](const json& j) { field = j.get<std::int64_t>(); });
}

ResumableFields& ResumableFields::add(const char* key, bool& field) {
  return add(key, [&field] { return plain(field); }, [&field](const json& j) { field = j.get<bool>(); });
}

ResumableFields& ResumableFields::add(const char* key, std::string& field) {
  return add(key, [&field] { return plain(field); }, [&field](const json& j) { field = j.get<std::string>(); });
}

ResumableFields& ResumableFields::add(const char* key, std::vector<double>& field) {
  return add(key, [&field] { return plain(field); }, [&field](const json& j) { field = j.get<std::vector<double>>(); });
}

ResumableFields& ResumableFields::add(const char* key, std::optional<std::int64_t>& field) {
  return add(
      key, [&field] { return field ? json(*field) : json(); },
      [&field](const json& j) {
        field.reset();
        if (!j.is_null()) field = j.get<std::int64_t>();
      });
}

ResumableFields& ResumableFields::add(const char* key, double& field, double when_null) {
  return add(
      key, [&field] { return std::isfinite(field) ? json(field) : json(); },
      [&field, when_null](const json& j) { field = j.is_null() ? when_null : j.get<double>(); });
}

ResumableFields& ResumableFields::add(const char* key, std::function<json()> save, std::function<void(const json&)> load) {
  fields_.push_back({key, std::move(save), std::move(load), std::nullopt});
  return *this;
}

ResumableFields& ResumableFields::optional(const json& absent) {
  if (fields_.empty()) throw std::logic_error("ResumableFields::optional before any field");
  fields_.back().absent = absent;
  return *this;
}

ResumableFields::json ResumableFields::save() const {
  json out = json::object();
  for (const auto& f : fields_) out[f.key] = f.save();
  return out;
}

void ResumableFields::load(const json& state, const std::string& source) const {
  if (!state.is_object()) throw UsageError(source + ": the resume state is not a JSON object");
  for (const auto& f : fields_) {
    const auto found = state.find(f.key);
    if (found == state.end() && !f.absent) {
      throw UsageError(source + ": the resume state lacks '" + f.key +
                       "' (written by another lmkit version, or damaged); start the run again in a new run_dir");
    }
    const json& value = found == state.end() ? *f.absent : *found;
    try {
      f.load(value);
    } catch (const json::exception& e) {
      throw UsageError(source + ": the resume state's '" + f.key + "' is " + value.dump() + ", which cannot be read (" +
                       e.what() + ")");
    }
  }
}

std::vector<std::string> ResumableFields::keys() const {
  std::vector<std::string> out;
  for (const auto& f : fields_) out.push_back(f.key);
  return out;
}

}  // namespace lmkit::training
