// Tensors in the files other programs write, and back: safetensors (.safetensors), NumPy (.npy, one
// array; .npz, a zip of them, stored or deflated) and PyTorch's torch.save of a dict of tensors (the
// zip format of PyTorch ≥ 1.6 and the legacy one before it: .pt, .pth, .bin). The format is told by
// the file's first bytes, not its name.
//
// Large files are not read whole: safetensors, .npy and the stored members of .npz are memory-mapped,
// and reading one entry touches only its bytes (an LLM's unembedding is ~1 GB in float32, beside
// everything else in the file). A deflated .npz member is inflated alone; a torch.save file is read
// whole (its pickle indexes the storages). Every header is checked before any data is read: offsets
// inside the file, sizes that match dtype × shape, no two entries sharing bytes, known dtypes,
// UTF-8 names — a damaged or truncated file is an EnvironmentError naming the file and the entry.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/config/declared_result.h"
#include "runtime/core/byte_span.h"
#include "runtime/core/torch.h"

namespace lmkit {

// One entry of a tensor file, as its header describes it (nothing of its data is read).
struct StoredTensor {
  std::string name;
  std::string dtype;  // lmkit's name: "float32", "bfloat16", "int64", ...
  std::vector<std::int64_t> shape;
  std::int64_t bytes = 0;
};
inline auto declared_result(config::Tag<StoredTensor>) {
  return config::result_table(config::result_field("name", &StoredTensor::name, "the entry's name"),
                              config::result_field("dtype", &StoredTensor::dtype, "its element type as stored"),
                              config::result_field("shape", &StoredTensor::shape, "its sizes"),
                              config::result_field("bytes", &StoredTensor::bytes, "the size of its data"));
}

struct ReadTensorsOptions {
  std::vector<std::string> names;  // the entries to read (none: all); an unknown name is an error
  std::optional<std::string> dtype;  // converted on reading, e.g. "float32" for bfloat16/float16 weights
};
const config::BoundOptions<ReadTensorsOptions>& declared_options(config::Tag<ReadTensorsOptions>);

struct WriteTensorsOptions {
  std::optional<std::string> format;  // "safetensors", "npz", "npy" or "pt"; nil: from the file's extension
};
const config::BoundOptions<WriteTensorsOptions>& declared_options(config::Tag<WriteTensorsOptions>);

// The entries of a tensor file, in the file's order (safetensors: by data offset).
std::vector<StoredTensor> tensor_file_contents(const std::string& path);

// What a torch.save file's pickled object is, in a few words ("a dict of 2 entries ('epoch',
// 'lr')", "an object of torch.optim.sgd.SGD"): what a file that holds no tensor holds instead.
// "" for a file of another format.
std::string torch_save_object_summary(const std::string& path);

// The entries (all, or options.names), each a CPU tensor of its stored dtype unless options.dtype
// names another: contiguous, except that tensors a torch.save file stores as views of one storage
// and that are read together stay views of one copy of it (as torch.load gives them). A .npy file's one array is named after the file ("w.npy" → "w").
std::map<std::string, torch::Tensor> read_tensor_file(const std::string& path, const ReadTensorsOptions& options);

// The tensors of a torch.save-format zip archive held in memory — the weights archive inside an
// lmkit checkpoint (TorchScript's module pickle: attributes by name) — read by lmkit's own zip
// and pickle readers with every check of read_tensor_file: each tensor under its dotted path
// ("model.encoder.embedding"), on the CPU. Errors (EnvironmentError) start with `where`.
std::map<std::string, torch::Tensor> read_tensor_archive(const ByteSpan& archive, const std::string& where);

// Writes the tensors (moved to the CPU, made contiguous) atomically. A .npy file holds one tensor;
// NumPy has no bfloat16 (convert first, or write safetensors).
void write_tensor_file(const std::string& path, const std::map<std::string, torch::Tensor>& tensors,
                       const WriteTensorsOptions& options);

}  // namespace lmkit
