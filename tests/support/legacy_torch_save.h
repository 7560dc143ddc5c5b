// Legacy torch.save files built byte by byte, for the tests of lmkit's reader (the format:
// runtime/tensor_files/torch_pickle.h). PyTorch ≥ 1.6 writes it with
// _use_new_zipfile_serialization=False; the original AWD-LSTM and MoS codes, on PyTorch 0.x, wrote
// nothing else.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/core/byte_span.h"
#include "runtime/tensor_files/torch_pickle.h"
#include "runtime/tensor_files/zip_archive.h"

namespace lmkit::testing {

inline std::string le_bytes(std::uint64_t value, int width) {
  std::string out;
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}
inline std::string pickled_string(const std::string& text) { return "X" + le_bytes(text.size(), 4) + text; }
inline std::string pickled_small(int value) { return "K" + std::string(1, static_cast<char>(value)); }
inline const std::string kLegacyMagic("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15);
inline std::string legacy_protocol(int version) { return "\x80\x02M" + le_bytes(static_cast<std::uint64_t>(version), 2) + "."; }
inline std::string legacy_facts(bool little_endian) {
  return "\x80\x02}(" + pickled_string("protocol_version") + "M" + le_bytes(1001, 2) + pickled_string("little_endian") +
         (little_endian ? "\x88" : "\x89") + pickled_string("type_sizes") + "}(" + pickled_string("short") + pickled_small(2) +
         pickled_string("int") + pickled_small(4) + pickled_string("long") + pickled_small(4) + "uu.";
}
// A float32 tensor of `numel` elements over the storage `key`, as torch.save pickles it.
inline std::string legacy_tensor(const std::string& key, int numel) {
  return "ctorch._utils\n_rebuild_tensor_v2\n((" + pickled_string("storage") + "ctorch\nFloatStorage\n" + pickled_string(key) +
         pickled_string("cpu") + pickled_small(numel) + "NtQ" + pickled_small(0) + pickled_small(numel) + "\x85" +
         pickled_small(1) + "\x85\x89" "ccollections\nOrderedDict\n)RtR";  // (a hex escape ends where the literal does)
}
// {name: legacy_tensor(key, numel)} for each (name, key, numel).
inline std::string legacy_object(const std::vector<std::tuple<std::string, std::string, int>>& tensors) {
  std::string out = "\x80\x02}(";
  for (const auto& [name, key, numel] : tensors) out += pickled_string(name) + legacy_tensor(key, numel);
  return out + "u.";
}
// An nn.Module object as the legacy torch.save pickles a whole model: its class through the
// ('module', class, source file, source) persistent id (the first time a class comes), NEWOBJ,
// then BUILD with its __dict__: _parameters {name: tensor}, _modules {name: submodule}.
inline std::string legacy_module(const std::string& module, const std::string& cls,
                                 const std::vector<std::pair<std::string, std::string>>& parameters,
                                 const std::vector<std::pair<std::string, std::string>>& submodules) {
  std::string out = "(" + pickled_string("module") + "c" + module + "\n" + cls + "\n" + pickled_string(module + ".py") +
                    pickled_string("class " + cls + ": ...") + "tQ)\x81}(" + pickled_string("_parameters") +
                    "ccollections\nOrderedDict\n)R(";
  for (const auto& [name, tensor] : parameters) out += pickled_string(name) + tensor;
  out += "u" + pickled_string("_modules") + "ccollections\nOrderedDict\n)R(";
  for (const auto& [name, submodule] : submodules) out += pickled_string(name) + submodule;
  return out + "u" + pickled_string("training") + "\x88ub";
}
inline std::string legacy_keys(const std::vector<std::string>& keys) {
  std::string out = "\x80\x02](";
  for (const auto& key : keys) out += pickled_string(key);
  return out + "e.";
}
// A storage's record: its element count, then `numel` float32 values 0, 1, 2, ...
inline std::string legacy_storage(std::uint64_t count, int numel) {
  std::string out = le_bytes(count, 8);
  for (int i = 0; i < numel; ++i) {
    const float value = static_cast<float>(i);
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  return out;
}

// The legacy file of the same object as a torch.save zip archive: its data.pkl is the object
// pickle (the same persistent ids, without the legacy format's view metadata), its data/<key>
// members the storages' bytes.
inline std::string legacy_copy_of_zip(const std::string& zip) {
  const ByteSpan span("a torch.save zip archive", zip, "an archive");
  const auto members = tensor_files::zip_members(span);
  std::string pickle, prefix;
  for (const auto& member : members) {
    if (member.name.size() >= 8 && member.name.compare(member.name.size() - 8, 8, "data.pkl") == 0) {
      std::string buffer;
      pickle = std::string(tensor_files::member_bytes(member, buffer, "data.pkl"));
      prefix = member.name.substr(0, member.name.size() - 8) + "data/";
    }
  }
  // Each storage's dtype, for its element count.
  std::map<std::string, std::size_t> element_size;
  for (const auto& t : tensor_files::pickled_tensors(pickle, "data.pkl", zip.size())) {
    element_size[t.storage_key] = c10::elementSize(t.dtype);
  }
  std::vector<std::string> keys;
  std::string storages;
  for (const auto& member : members) {
    if (member.name.compare(0, prefix.size(), prefix) != 0) continue;
    const auto key = member.name.substr(prefix.size());
    if (!element_size.count(key)) continue;
    std::string buffer;
    const auto bytes = tensor_files::member_bytes(member, buffer, member.name);
    keys.push_back(key);
    storages += le_bytes(bytes.size() / element_size.at(key), 8) + std::string(bytes);
  }
  return kLegacyMagic + legacy_protocol(1001) + legacy_facts(true) + pickle + legacy_keys(keys) + storages;
}

}  // namespace lmkit::testing
