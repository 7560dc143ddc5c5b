// The tensors of a torch.save file (the zip format of PyTorch ≥ 1.6, and the legacy format below): its data.pkl is read by a
// pickle reader of lmkit's own, because LibTorch's (torch::pickle_load) stops at what Python's
// pickler writes for a real state_dict (the OrderedDict's _metadata, a dict of one item).
//
// Only what torch.save writes for dicts, lists and tuples of tensors is understood: protocol 2–5
// opcodes for None, booleans, integers, floats, strings, bytes, tuples, lists, dicts, memo, GLOBAL
// and REDUCE of torch._utils._rebuild_tensor_v2 / _rebuild_parameter and collections.OrderedDict,
// BUILD (an object's __dict__ kept: a whole nn.Module saved by torch.save(model) yields its
// parameters and buffers under their state_dict names; a TorchScript object, as
// torch::serialize::OutputArchive writes for lmkit's own checkpoints, yields its attributes by
// name) and persistent ids ('storage', torch.<Type>Storage, key, location, numel).
// Any other callable gives an opaque value, so a pickle holding other objects still yields its
// tensors. Nothing is executed: a pickle names functions, and this reader calls none of them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/torch.h"

namespace lmkit::tensor_files {

struct PickledTensor {
  std::string name;  // its path in the pickled structure: dict keys and list indices joined by dots
  torch::ScalarType dtype = torch::kFloat32;
  std::vector<std::int64_t> shape, stride;
  std::int64_t storage_offset = 0;  // in elements
  std::string storage_key;          // the storage's bytes are the member <archive>/data/<key>
  std::int64_t storage_numel = 0;
  std::int64_t identity = 0;  // one number per tensor object: names of one tensor (tied weights) share it
};

// What reading a file may make lmkit build, in bytes: 64 MiB plus 64 bytes per byte of the file,
// at most 4 GiB. A legal torch.save file's pickle is a small part of it (the tensors' bytes are the
// rest) and makes ~30 bytes of values per pickled byte; a hostile one can make any amount (a
// 586-byte pickle doubling a memoized string asked for 2.4 GB after 26 doublings; 40 million
// NONE opcodes, 39 KB deflated, ~12 GB of values).
std::uint64_t build_budget(std::uint64_t file_bytes);

// Every tensor reachable from the pickle's value through dicts, lists and tuples, in order (at most
// 1,000,000 names: more is a damaged or hostile pickle, not a model). Everything the pickle makes —
// values, strings, containers' slots, the names of the tensors — is counted in bytes as it is made,
// against build_budget(file_bytes), `file_bytes` being the size of the file it came from; going over
// is an EnvironmentError "<where>: its pickle (data.pkl) builds more than N bytes from M bytes of
// file", never an allocation. EnvironmentError naming `where` for a damaged or unsupported pickle.
// `object_summary`, when given, receives the pickle's object in a few words ("a dict of 2 entries
// ('epoch', 'lr')", "an object of torch.optim.sgd.SGD"): what a file that holds no tensor holds.
std::vector<PickledTensor> pickled_tensors(std::string_view pickle, const std::string& where, std::uint64_t file_bytes,
                                           std::string* object_summary = nullptr);

// The legacy torch.save format (PyTorch < 1.6's only one, later `_use_new_zipfile_serialization=
// False`; what the original AWD-LSTM and MoS codes wrote): five pickles in a row — the magic
// number, the protocol version (1001), the machine's facts (byte order, C type sizes), the object
// (its storages as persistent ids) and the list of storage keys — then each listed storage, in the
// list's order: its element count (int64, little-endian) and its elements. Read with the rules of
// pickled_tensors (one build budget for all the pickles, nothing executed).
struct LegacyStorage {
  std::string key;
  torch::ScalarType dtype = torch::kFloat32;
  std::uint64_t offset = 0;  // of its first element, in the file
  std::int64_t numel = 0;
};
struct LegacyTorchSave {
  std::vector<PickledTensor> tensors;
  std::vector<LegacyStorage> storages;
  std::string object_summary;  // as pickled_tensors gives it
};
// Whether a file begins as the legacy format does (its first pickle, the magic number).
bool looks_like_legacy_torch_save(std::string_view first_bytes);
// EnvironmentError naming `where` for a damaged, truncated or big-endian file: a storage count
// past the file's end, a key listed twice or not used by the pickle, a storage the pickle uses
// that the file does not hold.
LegacyTorchSave legacy_torch_save(std::string_view file, const std::string& where);

}  // namespace lmkit::tensor_files
