#include "runtime/tensor_files/safetensors_format.h"

#include <algorithm>
#include <set>
#include <cstring>

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::tensor_files {
namespace {

using nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we, before allocating anything.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

const std::vector<std::pair<const char*, torch::ScalarType>>& dtype_names() {
  static const std::vector<std::pair<const char*, torch::ScalarType>> names = {
      {"F64", torch::kFloat64}, {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
      {"I64", torch::kInt64},   {"I32", torch::kInt32},   {"I16", torch::kInt16},   {"I8", torch::kInt8},
      {"U8", torch::kUInt8},    {"BOOL", torch::kBool}};
  return names;
}

std::uint64_t header_length(const MappedFile& file) {
  const auto bytes = file.bytes(0, 8, "the safetensors header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  return n;
}

// A header value for a message: a scalar as written, anything else by its kind (dumping a deeply
// nested value would recurse as deep as a hostile header nests).
std::string shown(const json& value) { return value.is_primitive() ? value.dump() : std::string("a JSON ") + value.type_name(); }

std::int64_t non_negative_integer(const json& value, const std::string& where) {
  if (value.is_number_unsigned() && value.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return value.get<std::int64_t>();
  }
  if (value.is_number_integer() && !value.is_number_unsigned() && value.get<std::int64_t>() >= 0) return value.get<std::int64_t>();
  throw EnvironmentError(where + " must be a non-negative integer below 2^63, got " + shown(value));
}

}  // namespace

bool looks_like_safetensors(const MappedFile& file) {
  if (file.size() < 10) return false;
  // The header length is not checked here: a truncated file is told as such by safetensors_entries.
  return header_length(file) >= 2 && file.bytes(8, 1, "")[0] == '{';
}

std::vector<ArrayEntry> safetensors_entries(const MappedFile& file) {
  const std::string in_file = "safetensors file '" + file.path() + "'";
  const auto n = header_length(file);
  if (n > kMaxHeaderBytes) {
    throw EnvironmentError(in_file + " claims a header of " + integer_text(n) + " bytes (at most 100 MB): the file is damaged or not safetensors");
  }
  const auto header_text = file.bytes(8, n, "its header");
  json header;
  // JSON lets an object name a key twice and keeps the last: a header naming an entry twice is
  // refused instead (as the safetensors library does), so that listing and reading agree.
  std::set<std::string> names;
  std::string twice;
  try {
    header = json::parse(header_text, [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key && depth == 1 && !names.insert(parsed.get<std::string>()).second &&
          twice.empty()) {
        twice = parsed.get<std::string>();
      }
      return true;
    });
  } catch (const json::exception& e) {
    throw EnvironmentError(in_file + ": its header is not valid JSON text (" + e.what() + ")");
  }
  if (!twice.empty()) {
    throw EnvironmentError(in_file + ": its header names the entry '" + shown_name(twice) +
                           "' twice (which one is meant?): the file is damaged");
  }
  if (!header.is_object()) throw EnvironmentError(in_file + ": its header must be a JSON object of entries");
  const std::uint64_t data_start = 8 + n;
  const std::uint64_t data_size = file.size() - data_start;
  std::vector<std::pair<std::uint64_t, ArrayEntry>> by_offset;
  for (const auto& [name, spec] : header.items()) {
    if (name == "__metadata__") continue;
    check_stored_name(name, in_file);
    const std::string where = in_file + ", entry '" + name + "'";
    if (!spec.is_object() || !spec.contains("dtype") || !spec.contains("shape") || !spec.contains("data_offsets")) {
      throw EnvironmentError(where + ": must be an object with dtype, shape and data_offsets");
    }
    ArrayEntry entry;
    entry.name = name;
    const auto& dtype = spec.at("dtype");
    const auto known = std::find_if(dtype_names().begin(), dtype_names().end(),
                                    [&](const auto& p) { return dtype.is_string() && dtype.get<std::string>() == p.first; });
    if (known == dtype_names().end()) {
      throw EnvironmentError(where + ": dtype " + shown(dtype) +
                             " is not one lmkit reads (F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
    }
    entry.dtype = known->second;
    if (!spec.at("shape").is_array()) throw EnvironmentError(where + ": shape must be a list of sizes");
    for (const auto& size : spec.at("shape")) entry.shape.push_back(non_negative_integer(size, where + ": a size"));
    const auto& offsets = spec.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2) throw EnvironmentError(where + ": data_offsets must be [begin, end]");
    const auto begin = static_cast<std::uint64_t>(non_negative_integer(offsets[0], where + ": data_offsets' begin"));
    const auto end = static_cast<std::uint64_t>(non_negative_integer(offsets[1], where + ": data_offsets' end"));
    entry.byte_count = checked_byte_count(entry.shape, entry.dtype, where);
    if (end < begin || end - begin != entry.byte_count) {
      throw EnvironmentError(where + ": data_offsets [" + integer_text(begin) + ", " + integer_text(end) + ") hold " +
                             (end < begin ? std::string("a negative count of") : integer_text(end - begin)) + " bytes, but " +
                             dtype.get<std::string>() + " of shape " + format_shape(entry.shape) + " needs " +
                             integer_text(entry.byte_count));
    }
    if (end > data_size) {
      throw EnvironmentError(where + ": its data [" + integer_text(begin) + ", " + integer_text(end) +
                             ") lies past the end of the file (" + integer_text(data_size) +
                             " bytes of data): the file is truncated or damaged");
    }
    entry.data = file.bytes(data_start + begin, entry.byte_count, where);
    by_offset.emplace_back(begin, std::move(entry));
  }
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ArrayEntry> entries;
  std::uint64_t previous_end = 0;
  std::string previous_name;
  for (auto& [begin, entry] : by_offset) {
    if (entry.byte_count > 0) {  // an empty entry holds no bytes to share
      if (begin < previous_end) {
        throw EnvironmentError(in_file + ": entries '" + previous_name + "' and '" + entry.name +
                               "' share bytes (overlapping data_offsets): the file is damaged");
      }
      previous_end = begin + entry.byte_count;
      previous_name = entry.name;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::string safetensors_image(const std::map<std::string, torch::Tensor>& tensors) {
  json header = json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const auto known = std::find_if(dtype_names().begin(), dtype_names().end(),
                                    [&](const auto& p) { return p.second == tensor.scalar_type(); });
    if (known == dtype_names().end()) {
      throw UsageError("write_tensors: '" + name + "' has dtype " + std::string(c10::toString(tensor.scalar_type())) +
                       ", which safetensors does not hold here: convert it first (e.g. t:float())");
    }
    const auto size = bytes_of(tensor).size();
    header[name] = {{"dtype", known->first}, {"shape", tensor.sizes().vec()}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  auto text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string image(8, '\0');
  for (int i = 0; i < 8; ++i) image[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xFFu);
  image += text;
  image.reserve(image.size() + offset);
  for (const auto& [name, tensor] : tensors) image += bytes_of(tensor);
  return image;
}

}  // namespace lmkit::tensor_files
