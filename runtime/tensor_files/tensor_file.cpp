#include "runtime/tensor_files/tensor_file.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include <torch/serialize.h>

#include "runtime/config/option_schema.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/mapped_file.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor_files/array_entry.h"
#include "runtime/tensor_files/numpy_format.h"
#include "runtime/tensor_files/safetensors_format.h"
#include "runtime/tensor/tensor_format.h"
#include "runtime/tensor_files/torch_pickle.h"
#include "runtime/tensor_files/zip_archive.h"

namespace lmkit {
namespace {

using namespace tensor_files;

// An entry as listed, and how to read it.
struct Listed {
  StoredTensor description;
  std::function<torch::Tensor()> read;
};

StoredTensor describe(const ArrayEntry& entry) {
  return {entry.name, dtype_name(entry.dtype), entry.shape, static_cast<std::int64_t>(entry.byte_count)};
}

Listed mapped(ArrayEntry entry) {
  auto description = describe(entry);
  return {std::move(description), [entry = std::move(entry)] { return tensor_of(entry); }};
}

std::string stem(const std::string& path) {
  const auto slash = path.find_last_of('/');
  auto name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  const auto dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// An .npz member: "name.npy" holds the array `name`.
Listed npz_member(const ZipMember& member, const std::string& where) {
  if (member.name.size() < 4 || member.name.compare(member.name.size() - 4, 4, ".npy") != 0) {
    throw EnvironmentError(where + " is not an .npy array: an .npz holds only arrays (np.savez)");
  }
  const auto name = member.name.substr(0, member.name.size() - 4);
  check_stored_name(name, where);
  std::string head_buffer;
  std::uint64_t data_offset = 0;
  // A deflated member's header is read by inflating its first bytes only; listing reads no data,
  // so the CRC-32 is checked when the array itself is read.
  const auto head = member_bytes(member, head_buffer, where, std::uint64_t{1} << 20, /*check_crc=*/false);
  auto entry = npy_header(head, member.size, name, where, data_offset);
  auto description = describe(entry);
  if (member.method == 0) {
    entry.data = member.data.substr(data_offset);
    return {std::move(description), [member, entry = std::move(entry), where] {
              std::string unused;
              member_bytes(member, unused, where);  // stored: read in place, its CRC-32 checked
              return tensor_of(entry);
            }};
  }
  return {std::move(description), [member, entry = std::move(entry), data_offset, where]() mutable {
            std::string buffer;
            entry.data = member_bytes(member, buffer, where).substr(data_offset);
            return tensor_of(entry);
          }};
}

// Where a torch.save file keeps a storage's bytes: a member of the zip archive (read through
// member_bytes, its CRC-32 checked once) or a span of the legacy format's file (read in place).
struct StorageSource {
  std::string name;      // in messages and as the key of the storages read once
  std::uint64_t size = 0;  // bytes
  // `reader`: who reads it, for the messages (the tensor's place in the file).
  std::function<std::string_view(std::string& buffer, bool check, const std::string& reader)> bytes;
};

// The tensors of a torch.save file, described by its pickle: `pickled` as torch_pickle.h lists
// them, `storages` by key; a storage the pickle uses and `storages` lacks is named as
// `storage_prefix` + its key. A tensor alone on its storage
// is read from the span of the storage it covers (a view of a large storage does not copy the rest);
// tensors sharing a storage are views of one copy of it, as in PyTorch (2,000 views of a 4 MB
// storage cost 4 MB, not 8 GB).
std::vector<Listed> torch_save_entries(const std::string& where, const std::vector<PickledTensor>& pickled,
                                       const std::map<std::string, StorageSource>& storages,
                                       const std::string& storage_prefix, const std::vector<std::string>& wanted) {
  // A tensor named several times (tied weights) is read once and shared; a storage's CRC-32 is
  // checked once, however many views read it.
  auto read_once = std::make_shared<std::map<std::int64_t, torch::Tensor>>();
  auto checked_storages = std::make_shared<std::set<std::string>>();
  // Whole storages read once for the tensors that share them, by storage and dtype.
  auto whole_storages = std::make_shared<std::map<std::pair<std::string, int>, torch::Tensor>>();
  std::vector<Listed> listed;
  std::set<std::string> names;
  // Storage key → the tensors (identities) over it that will be read: when only some names are
  // asked for, a storage they do not share is read only in the span each covers.
  std::map<std::string, std::set<std::int64_t>> tensors_on;
  for (const auto& t : pickled) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), t.name) != wanted.end()) {
      tensors_on[t.storage_key].insert(t.identity);
    }
  }
  for (auto& t : pickled) {
    // A tensor saved alone (torch.save(t)) has the empty path as its name; a NUL is never a name's.
    if (t.name.find('\0') != std::string::npos) check_stored_name(t.name, where);
    if (!names.insert(t.name).second) {
      throw EnvironmentError(where + ": its pickle names the tensor '" + shown_name(t.name) +
                             "' twice (a dict with a key twice: which one is meant?): the file is damaged");
    }
    const std::string tensor_where = where + ", tensor '" + t.name + "'";
    const auto found = storages.find(t.storage_key);
    if (found == storages.end()) {
      throw EnvironmentError(tensor_where + ": its storage " + storage_prefix + t.storage_key + " is missing from the file");
    }
    const auto* storage = &found->second;
    const auto element = static_cast<std::int64_t>(c10::elementSize(t.dtype));
    const auto byte_count = checked_byte_count(t.shape, t.dtype, tensor_where);
    // The elements it covers: [offset, last] of its storage, checked against the storage's size.
    std::int64_t last = t.storage_offset;
    bool in_range = t.storage_offset >= 0;
    for (std::size_t d = 0; d < t.shape.size() && byte_count > 0; ++d) {
      std::int64_t step = 0;
      in_range = in_range && t.stride[d] >= 0 && !__builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &step) &&
                 !__builtin_add_overflow(last, step, &last);
    }
    const auto storage_numel = static_cast<std::int64_t>(storage->size) / element;
    if (!in_range || (byte_count > 0 && last >= storage_numel)) {
      throw EnvironmentError(tensor_where + ": its sizes, strides and offset reach past its storage of " +
                             integer_text(storage_numel) + " elements: the file is damaged");
    }
    // An expanded view (a stride 0) holds more elements than its storage: refused, so that a small
    // file cannot ask for any amount of memory (save it .contiguous() first).
    if (byte_count > storage->size) {
      throw EnvironmentError(tensor_where + ": a view of " + integer_text(byte_count) + " bytes over a storage of " +
                             integer_text(storage->size) + " (an expanded tensor): save it with .contiguous()");
    }
    StoredTensor description{t.name, dtype_name(t.dtype), t.shape, static_cast<std::int64_t>(byte_count)};
    const bool shared = tensors_on[t.storage_key].size() > 1;
    listed.push_back({std::move(description), [source = *storage, t, last, byte_count, element, storage_numel, shared,
                                               tensor_where, read_once, checked_storages, whole_storages] {
                        auto& known = (*read_once)[t.identity];
                        if (known.defined()) return known;
                        if (byte_count == 0) return known = tensor_from_bytes({}, t.shape, t.dtype);
                        std::string buffer;
                        const bool check = checked_storages->insert(source.name).second;
                        if (shared) {
                          auto& whole = (*whole_storages)[{source.name, static_cast<int>(t.dtype)}];
                          if (!whole.defined()) {
                            const auto bytes = source.bytes(buffer, check, tensor_where);
                            whole = tensor_from_bytes(bytes.substr(0, static_cast<std::size_t>(storage_numel * element)),
                                                      {storage_numel}, t.dtype);
                          }
                          return known = whole.as_strided(t.shape, t.stride, t.storage_offset);
                        }
                        const auto bytes = source.bytes(buffer, check, tensor_where);
                        const auto span = last - t.storage_offset + 1;
                        const auto covered = tensor_from_bytes(
                            bytes.substr(static_cast<std::size_t>(t.storage_offset * element), static_cast<std::size_t>(span * element)),
                            {span}, t.dtype);
                        return known = covered.as_strided(t.shape, t.stride, 0).contiguous();
                      }});
  }
  return listed;
}

// A torch.save zip archive: its pickle (…/data.pkl) and storages (…/data/<key>). `file_bytes`: the
// size of the file the archive came from, for the pickle's build budget.
std::vector<Listed> torch_save_zip_entries(const std::string& where, const std::vector<ZipMember>& members, const ZipMember& pickle,
                                           std::uint64_t file_bytes, const std::vector<std::string>& wanted = {}) {
  const auto prefix = pickle.name.substr(0, pickle.name.size() - std::string("data.pkl").size());
  // torch.save stores its pickle uncompressed, kilobytes to megabytes: a larger one is not a model's.
  if (pickle.size > (std::uint64_t{1} << 30)) throw EnvironmentError(where + ": its data.pkl claims more than 1 GiB: it is damaged");
  if (pickle.size > build_budget(file_bytes)) {
    throw EnvironmentError(where + ": its data.pkl inflates to " + integer_text(pickle.size) + " bytes from " +
                           integer_text(file_bytes) + " bytes of file, more than lmkit builds from a file that size "
                           "(64 MiB plus 64 bytes per byte of file): it is damaged or hostile");
  }
  std::map<std::string, StorageSource> storages;
  const auto storage_prefix = prefix + "data/";
  for (const auto& member : members) {
    if (member.name.compare(0, storage_prefix.size(), storage_prefix) != 0) continue;
    storages[member.name.substr(storage_prefix.size())] = {
        member.name, member.size, [member](std::string& buffer, bool check, const std::string& reader) {
          return member_bytes(member, buffer, reader, UINT64_MAX, check);
        }};
  }
  std::string pickle_buffer;
  const auto pickled = pickled_tensors(member_bytes(pickle, pickle_buffer, where), where, file_bytes);
  return torch_save_entries(where, pickled, storages, storage_prefix, wanted);
}

// A torch.save file in the legacy format (torch_pickle.h): its storages are spans of the file.
std::vector<Listed> torch_save_legacy_entries(const std::string& where, const ByteSpan& file,
                                              const std::vector<std::string>& wanted = {}) {
  const auto all = file.bytes(0, file.size(), "the file");
  const auto legacy = legacy_torch_save(all, where);
  std::map<std::string, StorageSource> storages;
  for (const auto& storage : legacy.storages) {
    const auto size = static_cast<std::uint64_t>(storage.numel) * c10::elementSize(storage.dtype);
    const auto bytes = all.substr(static_cast<std::size_t>(storage.offset), static_cast<std::size_t>(size));
    storages[storage.key] = {"storage '" + storage.key + "'", size, [bytes](std::string&, bool, const std::string&) { return bytes; }};
  }
  // (legacy_torch_save has checked that the file holds every storage the pickle uses)
  return torch_save_entries(where, legacy.tensors, storages, "", wanted);
}

std::vector<ZipMember>::const_iterator find_pickle(const std::vector<ZipMember>& members) {
  return std::find_if(members.begin(), members.end(), [](const ZipMember& m) {
    return m.name.size() >= 8 && m.name.compare(m.name.size() - 8, 8, "data.pkl") == 0;
  });
}

// A POSIX tar archive: "ustar" at byte 257 of its first header.
bool looks_like_tar(const MappedFile& file) {
  return file.size() >= 512 && file.bytes(257, 5, "its tar header") == "ustar";
}

// `wanted`: the names that will be read (empty: all), for the torch.save reader's choice between
// a span of a storage and one copy of it shared by views.
std::vector<Listed> open_entries(const MappedFile& file, const std::vector<std::string>& wanted = {}) {
  const std::string where = "tensor file '" + file.path() + "'";
  const auto first = file.bytes(0, std::min<std::uint64_t>(file.size(), 8), "its first bytes");
  if (looks_like_npy(first)) {
    std::uint64_t data_offset = 0;
    auto entry = npy_header(file.bytes(0, file.size(), "the array"), file.size(), stem(file.path()), where, data_offset);
    entry.data = file.bytes(data_offset, entry.byte_count, "the array");
    return {mapped(std::move(entry))};
  }
  if (looks_like_zip(file.span())) {
    const auto members = zip_members(file.span());
    const auto pickle = find_pickle(members);
    if (pickle != members.end()) {
      return torch_save_zip_entries("torch.save file '" + file.path() + "'", members, *pickle, file.size(), wanted);
    }
    std::set<std::string> names;
    for (const auto& member : members) {
      if (!names.insert(member.name).second) {
        throw EnvironmentError(where + ": the archive holds the member '" + shown_name(member.name) +
                               "' twice (which one is meant?): the file is damaged");
      }
    }
    std::vector<Listed> listed;
    for (const auto& member : members) listed.push_back(npz_member(member, where + ", member '" + shown_name(member.name) + "'"));
    return listed;
  }
  if (looks_like_safetensors(file)) {
    std::vector<Listed> listed;
    for (auto& entry : safetensors_entries(file)) listed.push_back(mapped(std::move(entry)));
    return listed;
  }
  if (looks_like_legacy_torch_save(file.bytes(0, std::min<std::uint64_t>(file.size(), 24), "its first bytes"))) {
    return torch_save_legacy_entries("torch.save file '" + file.path() + "' (legacy format)", file.span(), wanted);
  }
  if (looks_like_tar(file)) {
    throw EnvironmentError(where + " is a tar archive: the torch.save format of PyTorch before 0.1.10 (2017), which lmkit "
                           "does not read; load it with that PyTorch and save it again");
  }
  if (!first.empty() && static_cast<unsigned char>(first[0]) == 0x80) {
    throw EnvironmentError(where + " is a pickle, but not torch.save's (its first pickle is not torch.save's magic number)");
  }
  throw EnvironmentError(where + " is not a format lmkit reads: safetensors, NumPy .npy/.npz or a torch.save zip archive "
                         "(its first bytes are not any of theirs)");
}

enum class Format { Safetensors, Npz, Npy, Torch };

Format format_for(const std::string& path, const std::optional<std::string>& named) {
  static const std::vector<std::pair<std::string, Format>> names = {
      {"safetensors", Format::Safetensors}, {"npz", Format::Npz}, {"npy", Format::Npy}, {"pt", Format::Torch}};
  if (named) {
    for (const auto& [name, format] : names) {
      if (*named == name) return format;
    }
    throw UsageError("write_tensors: format '" + *named + "' is not one of safetensors, npz, npy, pt");
  }
  const auto dot = path.find_last_of('.');
  const auto extension = dot == std::string::npos ? "" : path.substr(dot + 1);
  for (const auto& [name, format] : names) {
    if (extension == name) return format;
  }
  if (extension == "pth" || extension == "bin") return Format::Torch;
  throw UsageError("write_tensors: '" + path + "' has no extension that names a format (.safetensors, .npz, .npy, .pt): "
                   "give one, or the option format");
}

}  // namespace

const config::BoundOptions<ReadTensorsOptions>& declared_options(config::Tag<ReadTensorsOptions>) {
  static const config::BoundOptions<ReadTensorsOptions> options(
      "read_tensors", {{"names", &ReadTensorsOptions::names, "the entries to read (default: all)"},
                       {"dtype", &ReadTensorsOptions::dtype, "convert each to this dtype, e.g. \"float32\" (default: as stored)"}});
  return options;
}

const config::BoundOptions<WriteTensorsOptions>& declared_options(config::Tag<WriteTensorsOptions>) {
  static const config::BoundOptions<WriteTensorsOptions> options(
      "write_tensors", {{"format", &WriteTensorsOptions::format, config::OneOf{{"safetensors", "npz", "npy", "pt"}},
                         "the file format (default: from the extension)"}});
  return options;
}

namespace {

// `read` on the mapped file; if the file shrank under the mapping meanwhile (the SIGBUS handler
// put zeros where its pages were), that is the error, whatever was read or thrown.
template <typename Read>
auto unchanged_while(const MappedFile& file, Read&& read) {
  try {
    auto result = read();
    file.check_unchanged();
    return result;
  } catch (const std::exception&) {
    file.check_unchanged();
    throw;
  }
}

}  // namespace

std::vector<StoredTensor> tensor_file_contents(const std::string& path) {
  MappedFile file(path, "tensor file");
  return unchanged_while(file, [&] {
    std::vector<StoredTensor> contents;
    for (auto& listed : open_entries(file)) contents.push_back(std::move(listed.description));
    return contents;
  });
}

std::string torch_save_object_summary(const std::string& path) {
  MappedFile file(path, "tensor file");
  const std::string where = "torch.save file '" + path + "'";
  return unchanged_while(file, [&]() -> std::string {
    if (looks_like_legacy_torch_save(file.bytes(0, std::min<std::uint64_t>(file.size(), 24), "its first bytes"))) {
      return legacy_torch_save(file.bytes(0, file.size(), "the file"), where + " (legacy format)").object_summary;
    }
    if (!looks_like_zip(file.span())) return "";
    const auto members = zip_members(file.span());
    const auto pickle = find_pickle(members);
    if (pickle == members.end()) return "";
    std::string buffer, summary;
    pickled_tensors(member_bytes(*pickle, buffer, where), where, file.size(), &summary);
    return summary;
  });
}

std::map<std::string, torch::Tensor> read_tensor_file(const std::string& path, const ReadTensorsOptions& options) {
  // Parsed first: a misspelt dtype is refused before the file is opened.
  const bool convert = options.dtype.has_value();
  const torch::ScalarType dtype = convert ? parse_dtype(*options.dtype) : torch::kFloat32;
  MappedFile file(path, "tensor file");
  return unchanged_while(file, [&] {
    const auto entries = open_entries(file, options.names);
    std::vector<std::string> names;
    for (const auto& listed : entries) names.push_back(listed.description.name);
    for (const auto& wanted : options.names) {
      if (std::find(names.begin(), names.end(), wanted) == names.end()) {
        throw UsageError("read_tensors: '" + path + "': " + config::unknown_key_text("entry", wanted, names));
      }
    }
    std::map<std::string, torch::Tensor> tensors;
    for (const auto& listed : entries) {
      const auto& name = listed.description.name;
      if (!options.names.empty() && std::find(options.names.begin(), options.names.end(), name) == options.names.end()) continue;
      auto tensor = listed.read();
      tensors[name] = convert ? tensor.to(dtype) : tensor;
    }
    return tensors;
  });
}

std::map<std::string, torch::Tensor> read_tensor_archive(const ByteSpan& archive, const std::string& where) {
  const auto members = zip_members(archive);
  const auto pickle = find_pickle(members);
  if (pickle == members.end()) throw EnvironmentError(where + " has no data.pkl: it is damaged");
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& listed : torch_save_zip_entries(where, members, *pickle, archive.size())) {
    tensors[listed.description.name] = listed.read();
  }
  return tensors;
}

void write_tensor_file(const std::string& path, const std::map<std::string, torch::Tensor>& given,
                       const WriteTensorsOptions& options) {
  const auto format = format_for(path, options.format);
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, tensor] : given) {
    if (name.empty()) throw UsageError("write_tensors: a tensor needs a name that is not empty");
    if (name.find('\0') != std::string::npos) {
      throw UsageError("write_tensors: the name '" + shown_name(name) +
                       "' holds a NUL byte; a file's names end there (\"w\\0a\" and \"w\\0b\" would both be \"w\"): rename it");
    }
    if (!tensor.defined()) throw UsageError("write_tensors: '" + name + "' is not a tensor");
    tensors[name] = tensor.detach().to(torch::kCPU).contiguous();
  }
  std::string image;
  switch (format) {
    case Format::Safetensors:
      try {
        image = safetensors_image(tensors);
      } catch (const nlohmann::json::exception& e) {
        throw UsageError(std::string("write_tensors: the names must be UTF-8 text (") + e.what() + ")");
      }
      break;
    case Format::Npy:
      if (tensors.size() != 1) {
        throw UsageError("write_tensors: a .npy file holds one array, got " + integer_text(tensors.size()) + " (write .npz for several)");
      }
      image = npy_image(tensors.begin()->second, tensors.begin()->first);
      break;
    case Format::Npz: {
      std::vector<std::pair<std::string, std::string>> files;
      for (const auto& [name, tensor] : tensors) files.emplace_back(name + ".npy", npy_image(tensor, name));
      image = stored_zip(files);
      break;
    }
    case Format::Torch: {
      c10::Dict<std::string, torch::Tensor> dict;
      for (const auto& [name, tensor] : tensors) dict.insert(name, tensor);
      const auto bytes = torch::pickle_save(c10::IValue(dict));
      image.assign(bytes.begin(), bytes.end());
      break;
    }
  }
  write_file_atomically(path, image);
}

}  // namespace lmkit
