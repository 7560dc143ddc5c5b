#include "runtime/tensor_files/torch_pickle.h"

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::tensor_files {
namespace {

struct Value;
using Ref = std::shared_ptr<Value>;

// A pickled value: the kinds torch.save's pickles hold. Containers are shared, as the memo shares
// them: SETITEMS on a memoized dict reaches every place that holds it.
struct Value {
  enum class Kind { None, Boolean, Integer, Float, String, Bytes, Tuple, List, Dict, Global, Storage, Tensor, Opaque };
  Kind kind = Kind::None;
  std::int64_t integer = 0;
  double number = 0;
  std::string text;  // a string, bytes, or a global's "module.name"
  std::vector<Ref> items;                    // tuple and list
  std::vector<std::pair<Ref, Ref>> entries;  // dict, in insertion order
  PickledTensor tensor;                      // storage (dtype, key, numel) and tensor
  bool script_object = false;                // an instance of a TorchScript class (__torch__.*): attributes by name
};

const std::map<std::string, torch::ScalarType>& storage_types() {
  static const std::map<std::string, torch::ScalarType> types = {
      {"torch.DoubleStorage", torch::kFloat64}, {"torch.FloatStorage", torch::kFloat32}, {"torch.HalfStorage", torch::kFloat16},
      {"torch.BFloat16Storage", torch::kBFloat16}, {"torch.LongStorage", torch::kInt64}, {"torch.IntStorage", torch::kInt32},
      {"torch.ShortStorage", torch::kInt16}, {"torch.CharStorage", torch::kInt8}, {"torch.ByteStorage", torch::kUInt8},
      {"torch.BoolStorage", torch::kBool}};
  return types;
}

// The bytes a pickle has made lmkit build so far, against its budget.
class BuildBudget {
 public:
  // pickles: what the messages call them ("its pickle (data.pkl)" in a zip archive).
  BuildBudget(std::string where, std::uint64_t file_bytes, std::string pickles = "its pickle (data.pkl)")
      : where_(std::move(where)), pickles_(std::move(pickles)), file_bytes_(file_bytes), limit_(build_budget(file_bytes)) {}
  const std::string& pickles() const { return pickles_; }
  void spend(std::uint64_t bytes) {
    used_ += bytes;
    if (used_ > limit_) {
      throw EnvironmentError(where_ + ": " + pickles_ + " builds more than " + integer_text(limit_) + " bytes from " +
                             integer_text(file_bytes_) + " bytes of file (lmkit allows 64 MiB plus 64 bytes per byte "
                             "of file): it is damaged or hostile, not a model's");
    }
  }

 private:
  std::string where_, pickles_;
  std::uint64_t file_bytes_, limit_, used_ = 0;
};

class PickleReader {
 public:
  // Reads the pickle that begins at byte `start` of `bytes` (the legacy format holds several in a
  // row); end() is where it stopped.
  PickleReader(std::string_view bytes, std::string where, BuildBudget& budget, std::size_t start = 0)
      : bytes_(bytes), where_(std::move(where)), at_(start), budget_(budget) {}
  // A damaged pickle can put a list inside itself: the containers are emptied here, so that no
  // cycle of shared pointers outlives the reader.
  ~PickleReader() {
    for (auto& value : made_) {
      value->items.clear();
      value->entries.clear();
    }
  }
  PickleReader(const PickleReader&) = delete;
  PickleReader& operator=(const PickleReader&) = delete;

  std::size_t end() const { return at_; }
  // The dtype of every storage its persistent ids named, by key.
  const std::map<std::string, torch::ScalarType>& storage_dtypes() const { return storage_dtypes_; }

  Ref run() {
    while (true) {
      const auto op = static_cast<unsigned char>(take(1)[0]);
      switch (op) {
        case 0x80: take(1); break;                                    // PROTO
        case 0x95: take(8); break;                                    // FRAME
        case '.': return pop();                                       // STOP
        case '(': marks_.push_back(stack_.size()); break;             // MARK
        case 'N': push(make(Value::Kind::None)); break;               // NONE
        case 0x88: push(boolean(true)); break;                        // NEWTRUE
        case 0x89: push(boolean(false)); break;                       // NEWFALSE
        case 'K': push(integer(unsigned_value(1))); break;            // BININT1
        case 'M': push(integer(unsigned_value(2))); break;            // BININT2
        case 'J': push(integer(static_cast<std::int32_t>(unsigned_value(4)))); break;  // BININT
        case 0x8a: push(integer(long_value(unsigned_value(1)))); break;                // LONG1
        case 'G': push(floating()); break;                            // BINFLOAT
        case 'X': push(string(unsigned_value(4), Value::Kind::String)); break;          // BINUNICODE
        case 0x8c: push(string(unsigned_value(1), Value::Kind::String)); break;         // SHORT_BINUNICODE
        case 0x8d: push(string(unsigned_value(8), Value::Kind::String)); break;         // BINUNICODE8
        case 'T': push(string(unsigned_value(4), Value::Kind::String)); break;          // BINSTRING
        case 'U': push(string(unsigned_value(1), Value::Kind::String)); break;          // SHORT_BINSTRING
        case 'B': push(string(unsigned_value(4), Value::Kind::Bytes)); break;           // BINBYTES
        case 'C': push(string(unsigned_value(1), Value::Kind::Bytes)); break;           // SHORT_BINBYTES
        case ')': push(make(Value::Kind::Tuple)); break;              // EMPTY_TUPLE
        case ']': push(make(Value::Kind::List)); break;               // EMPTY_LIST
        case '}': push(make(Value::Kind::Dict)); break;               // EMPTY_DICT
        case 't': push(tuple(pop_mark())); break;                     // TUPLE
        case 0x85: push(tuple(pop_n(1))); break;                      // TUPLE1
        case 0x86: push(tuple(pop_n(2))); break;                      // TUPLE2
        case 0x87: push(tuple(pop_n(3))); break;                      // TUPLE3
        case 'l': push(list(pop_mark())); break;                      // LIST
        case 'a': append(pop_n(1)); break;                            // APPEND
        case 'e': append(pop_mark()); break;                          // APPENDS
        case 's': set_items(pop_n(2)); break;                         // SETITEM
        case 'u': set_items(pop_mark()); break;                       // SETITEMS
        case 'c': push(global()); break;                              // GLOBAL
        case 0x93: {                                                  // STACK_GLOBAL
          const auto name = pop(), module = pop();
          push(qualified_name(module->text, name->text));
          break;
        }
        case 'Q': push(persistent(pop())); break;                     // BINPERSID
        case 'R': {                                                   // REDUCE
          const auto arguments = pop();
          push(reduce(pop(), arguments));
          break;
        }
        case 0x81: {                                                  // NEWOBJ
          pop();
          const auto type = pop();
          auto object = make(Value::Kind::Opaque);
          if (type->kind == Value::Kind::Global) object->text = type->text;  // its class, for summary()
          // A TorchScript module (what torch::serialize::OutputArchive writes, as in lmkit's own
          // checkpoints): its attributes are its parameters, buffers and submodules, by name.
          object->script_object = type->kind == Value::Kind::Global &&
                                  (type->text.rfind("__torch__.", 0) == 0);
          push(object);
          break;
        }
        case 'b': build(pop()); break;                                // BUILD
        case 'q': remember(unsigned_value(1)); break;                 // BINPUT
        case 'r': remember(unsigned_value(4)); break;                 // LONG_BINPUT
        case 0x94: remember(memo_.size()); break;                     // MEMOIZE
        case 'h': push(memo(unsigned_value(1))); break;               // BINGET
        case 'j': push(memo(unsigned_value(4))); break;               // LONG_BINGET
        case '0': pop(); break;                                       // POP
        case '2': push(top()); break;                                 // DUP
        default:
          fail("opcode 0x" + fmt_hex(op) + ", which torch.save does not write");
      }
    }
  }

 private:
  // Values are counted (a state_dict's pickle makes ~10 per tensor) so that a small hostile pickle
  // cannot make billions; containers are kept for the destructor's cycle breaking.
  Ref make(Value::Kind kind) {
    ++values_;
    budget_.spend(sizeof(Value) + 2 * sizeof(Ref));  // the value, its control block, its place on the stack or in a container
    auto value = std::make_shared<Value>();
    value->kind = kind;
    if (kind == Value::Kind::Tuple || kind == Value::Kind::List || kind == Value::Kind::Dict || kind == Value::Kind::Opaque) {
      made_.push_back(value);
    }
    return value;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw EnvironmentError(where_ + ": " + budget_.pickles() + " is damaged or not torch.save's: " + what + " at byte " + integer_text(at_));
  }
  static std::string fmt_hex(unsigned char op) {
    const char* digits = "0123456789abcdef";
    return {digits[op >> 4], digits[op & 15]};
  }
  std::string_view take(std::uint64_t n) {
    if (n > bytes_.size() - at_) fail("it ends early");
    const auto piece = bytes_.substr(at_, n);
    at_ += n;
    return piece;
  }
  std::uint64_t unsigned_value(int width) {
    const auto piece = take(static_cast<std::uint64_t>(width));
    std::uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(piece[static_cast<std::size_t>(i)]);
    return value;
  }
  std::int64_t long_value(std::uint64_t width) {
    if (width > 8) fail("an integer of " + integer_text(width) + " bytes");
    if (width == 0) return 0;
    const auto value = unsigned_value(static_cast<int>(width));
    const auto shift = 64 - 8 * width;
    return static_cast<std::int64_t>(value << shift) >> shift;  // sign-extended
  }
  Ref boolean(bool value) {
    auto v = make(Value::Kind::Boolean);
    v->integer = value;
    return v;
  }
  Ref integer(std::int64_t value) {
    auto v = make(Value::Kind::Integer);
    v->integer = value;
    return v;
  }
  Ref floating() {
    const auto raw = take(8);  // big-endian
    std::uint64_t bits = 0;
    for (const unsigned char c : raw) bits = (bits << 8) | c;
    auto v = make(Value::Kind::Float);
    std::memcpy(&v->number, &bits, sizeof bits);
    return v;
  }
  Ref string(std::uint64_t length, Value::Kind kind) {
    auto v = make(kind);
    const auto text = take(length);
    budget_.spend(text.size());
    v->text = std::string(text);
    return v;
  }
  // "module.name" of a GLOBAL or STACK_GLOBAL, counted before it is made (memoized strings
  // concatenated again and again double at each step).
  Ref qualified_name(std::string_view module, std::string_view name) {
    auto g = make(Value::Kind::Global);
    budget_.spend(module.size() + 1 + name.size());
    g->text.reserve(module.size() + 1 + name.size());
    g->text.append(module).append(".").append(name);
    return g;
  }
  Ref global() {
    const auto line = [&] {
      const auto end = bytes_.find('\n', at_);
      if (end == std::string_view::npos) fail("a GLOBAL without its end of line");
      const auto length = end - at_;
      return std::string(take(length + 1).substr(0, length));
    };
    const auto module = line();
    const auto name = line();
    return qualified_name(module, name);
  }
  void push(Ref value) {
    if (stack_.size() > bytes_.size()) fail("a stack larger than the pickle");
    stack_.push_back(std::move(value));
  }
  Ref top() {
    if (stack_.empty()) fail("an empty stack");
    return stack_.back();
  }
  Ref pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) fail("an empty stack");
    auto value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }
  std::vector<Ref> pop_n(std::size_t n) {
    std::vector<Ref> values(n);
    for (std::size_t i = n; i > 0; --i) values[i - 1] = pop();
    return values;
  }
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const auto mark = marks_.back();
    marks_.pop_back();
    std::vector<Ref> values(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return values;
  }
  void remember(std::uint64_t key) {
    budget_.spend(4 * sizeof(void*) + sizeof(std::uint64_t) + sizeof(Ref));  // a map node
    memo_[key] = top();
  }
  Ref memo(std::uint64_t key) {
    const auto found = memo_.find(key);
    if (found == memo_.end()) fail("a memo entry never stored (" + integer_text(key) + ")");
    return found->second;
  }
  Ref tuple(std::vector<Ref> items) {
    auto t = make(Value::Kind::Tuple);
    t->items = std::move(items);
    return t;
  }
  Ref list(std::vector<Ref> items) {
    auto l = make(Value::Kind::List);
    l->items = std::move(items);
    return l;
  }
  void append(std::vector<Ref> items) {
    auto target = top();
    if (target->kind != Value::Kind::List) return;  // appending to an opaque object: not ours to know
    budget_.spend(items.size() * sizeof(Ref));
    for (auto& item : items) target->items.push_back(std::move(item));
  }
  void set_items(std::vector<Ref> items) {
    if (items.size() % 2 != 0) fail("SETITEMS with an odd count");
    auto target = top();
    if (target->kind != Value::Kind::Dict) return;
    budget_.spend(items.size() * sizeof(Ref));
    for (std::size_t i = 0; i < items.size(); i += 2) target->entries.emplace_back(items[i], items[i + 1]);
  }
  // An object's state: kept for an opaque object (an nn.Module's __dict__, whose _parameters,
  // _buffers and _modules hold its tensors); an OrderedDict's (its _metadata) is not needed.
  void build(const Ref& state) {
    auto object = top();
    if (object->kind == Value::Kind::Opaque && state->kind == Value::Kind::Dict) {
      budget_.spend(state->entries.size() * 2 * sizeof(Ref));
      object->entries = state->entries;
    }
  }
  // ('storage', torch.<Type>Storage, key, location, numel[, view]): view, in the legacy format, is
  // None or (view key, offset, numel) of a storage that is a view of the storage `key`.
  //
  // The legacy format also names each nn.Module class of a whole saved model this way, once:
  // ('module', the class, its source file, its source), which torch.load compares with the class's
  // source now. Here it is the class's name, as a GLOBAL is; its source is neither run nor kept.
  Ref persistent(const Ref& id) {
    if (id->kind == Value::Kind::Tuple && id->items.size() == 4 && id->items[0]->kind == Value::Kind::String &&
        id->items[0]->text == "module" && id->items[1]->kind == Value::Kind::Global) {
      return id->items[1];
    }
    if (id->kind != Value::Kind::Tuple || id->items.size() < 5 || id->items[0]->text != "storage") {
      fail("a persistent id that is neither a storage nor a module class");
    }
    const auto type = storage_types().find(id->items[1]->text);
    if (type == storage_types().end()) fail("a storage of type " + id->items[1]->text + ", which lmkit does not read");
    if (id->items[2]->kind != Value::Kind::String) fail("a storage whose key is not a string");
    auto storage = make(Value::Kind::Storage);
    storage->tensor.dtype = type->second;
    budget_.spend(2 * id->items[2]->text.size() + 4 * sizeof(void*));
    storage->tensor.storage_key = id->items[2]->text;
    storage->tensor.storage_numel = id->items[4]->integer;
    const auto [known, fresh] = storage_dtypes_.emplace(storage->tensor.storage_key, type->second);
    if (!fresh && known->second != type->second) {
      fail("the storage '" + storage->tensor.storage_key + "' named with two types");
    }
    if (id->items.size() >= 6 && id->items[5]->kind == Value::Kind::Tuple) {
      const auto& view = id->items[5]->items;
      if (view.size() != 3 || view[1]->kind != Value::Kind::Integer || view[1]->integer < 0) {
        fail("a storage view without its key, offset and size");
      }
      storage->tensor.storage_offset = view[1]->integer;
    }
    return storage;
  }
  std::vector<std::int64_t> integers(const Ref& tuple) {
    if (tuple->kind != Value::Kind::Tuple) fail("sizes that are not a tuple");
    std::vector<std::int64_t> values;
    for (const auto& item : tuple->items) {
      if (item->kind != Value::Kind::Integer) fail("a size that is not an integer");
      values.push_back(item->integer);
    }
    return values;
  }
  Ref reduce(const Ref& callable, const Ref& arguments) {
    const auto& name = callable->text;
    const auto& args = arguments->items;
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      if (args.size() < 4 || args[0]->kind != Value::Kind::Storage || args[1]->kind != Value::Kind::Integer) {
        fail("a tensor without its storage, offset, sizes and strides");
      }
      auto t = make(Value::Kind::Tensor);
      t->tensor = args[0]->tensor;
      t->tensor.identity = static_cast<std::int64_t>(values_);
      // A storage that is a view of another (the legacy format's view metadata) starts inside it.
      if (__builtin_add_overflow(args[0]->tensor.storage_offset, args[1]->integer, &t->tensor.storage_offset)) {
        fail("a tensor's storage offset past 2^63");
      }
      budget_.spend((args[2]->items.size() + args[3]->items.size()) * sizeof(std::int64_t) + t->tensor.storage_key.size());
      t->tensor.shape = integers(args[2]);
      t->tensor.stride = integers(args[3]);
      if (t->tensor.shape.size() != t->tensor.stride.size()) fail("sizes and strides of different lengths");
      return t;
    }
    // PyTorch 0.4 pickled a Parameter as torch.nn.parameter.Parameter(data, requires_grad), later
    // ones as torch._utils._rebuild_parameter(data, requires_grad, hooks).
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state" ||
        name == "torch.nn.parameter.Parameter") {
      if (args.empty() || args[0]->kind != Value::Kind::Tensor) fail("a parameter without its tensor");
      return args[0];
    }
    if (name == "collections.OrderedDict") return make(Value::Kind::Dict);
    // LibTorch's pickler (torch::pickle_save) tags values with their TorchScript type, or wraps lists.
    if (name.rfind("torch.jit._pickle.", 0) == 0 && !args.empty()) return args[0];
    auto object = make(Value::Kind::Opaque);
    object->text = name;  // what made it, for summary()
    return object;
  }

  std::string_view bytes_;
  std::string where_;
  std::size_t at_ = 0;
  std::vector<Ref> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, Ref> memo_;
  std::vector<Ref> made_;
  std::map<std::string, torch::ScalarType> storage_dtypes_;
  BuildBudget& budget_;
  std::uint64_t values_ = 0;  // a tensor's identity: the count of values made before it
};

constexpr std::size_t kMaxNames = 1'000'000;

// A pickled value in a few words, for a file that holds no tensor: "a dict of 2 entries ('epoch',
// 'lr')", "an object of torch.optim.sgd.SGD", "a list of 3 items (an object of model.RNNModel, ...)".
std::string summary(const Value& value, int depth = 0) {
  const auto count = [](std::size_t n, const char* one, const char* many) {
    return integer_text(static_cast<std::int64_t>(n)) + " " + (n == 1 ? one : many);
  };
  switch (value.kind) {
    case Value::Kind::None: return "None";
    case Value::Kind::Boolean: return "a boolean";
    case Value::Kind::Integer: case Value::Kind::Float: return "a number";
    case Value::Kind::String: return "a string";
    case Value::Kind::Bytes: return "bytes";
    case Value::Kind::Global: return "the name " + value.text;
    case Value::Kind::Storage: return "a storage";
    case Value::Kind::Tensor: return "a tensor";
    case Value::Kind::Opaque: return value.text.empty() ? "an object" : "an object of " + value.text;
    case Value::Kind::Tuple: case Value::Kind::List: {
      std::string text = std::string(value.kind == Value::Kind::List ? "a list of " : "a tuple of ") + count(value.items.size(), "item", "items");
      if (depth == 0 && !value.items.empty()) {
        text += " (";
        for (std::size_t i = 0; i < value.items.size() && i < 3; ++i) text += (i ? ", " : "") + summary(*value.items[i], depth + 1);
        text += value.items.size() > 3 ? ", ...)" : ")";
      }
      return text;
    }
    case Value::Kind::Dict: {
      std::string text = "a dict of " + count(value.entries.size(), "entry", "entries");
      if (!value.entries.empty()) {
        text += " (";
        std::size_t shown = 0;
        for (const auto& [key, item] : value.entries) {
          if (shown == 3) break;
          text += (shown++ ? ", " : "") + (key->kind == Value::Kind::String ? "'" + key->text.substr(0, 40) + "'" : summary(*key, 2));
        }
        text += value.entries.size() > 3 ? ", ...)" : ")";
      }
      return text;
    }
  }
  return "a value";
}

// Tensors are listed under every path that reaches them (tied weights have two names); a container
// reached again is not walked again (the memo can make a small pickle an exponentially large tree).
void collect(const Ref& value, const std::string& path, std::vector<PickledTensor>& out, std::set<const Value*>& walked, int depth,
             BuildBudget& budget) {
  const auto joined = [&](const std::string& step) {
    budget.spend(path.size() + 1 + step.size());  // a name: long keys nested deep make long names
    return path.empty() ? step : path + "." + step;
  };
  const auto collect = [&](const Ref& item, const std::string& item_path) {
    lmkit::tensor_files::collect(item, item_path, out, walked, depth + 1, budget);
  };
  if (value->kind == Value::Kind::Tensor) {
    if (out.size() >= kMaxNames) {
      throw EnvironmentError("a torch.save pickle naming more than 1,000,000 tensors is damaged or hostile, not a model");
    }
    budget.spend(sizeof(PickledTensor) + value->tensor.storage_key.size() +
                 (value->tensor.shape.size() + value->tensor.stride.size()) * sizeof(std::int64_t));
    out.push_back(value->tensor);
    out.back().name = path;
    return;
  }
  // A state_dict is a few levels deep; a damaged pickle may nest a million lists.
  if (depth > 100 || !walked.insert(value.get()).second) return;
  budget.spend(3 * sizeof(void*));  // its place in `walked`
  if (value->kind == Value::Kind::Dict) {
    for (const auto& [key, item] : value->entries) {
      if (key->kind == Value::Kind::String) collect(item, joined(key->text));
      if (key->kind == Value::Kind::Integer) collect(item, joined(integer_text(key->integer)));
    }
  } else if (value->kind == Value::Kind::Opaque && value->script_object) {
    for (const auto& [key, item] : value->entries) {
      if (key->kind == Value::Kind::String) collect(item, joined(key->text));
    }
  } else if (value->kind == Value::Kind::Opaque) {
    // A whole nn.Module (torch.save(model)): its parameters, buffers and submodules, named as its
    // state_dict names them ("rnns.0.module.weight_hh_l0_raw"); its other attributes are left out
    // (AWD-LSTM's WeightDrop keeps the last dropped-out weight there, which is no parameter).
    for (const auto& [key, item] : value->entries) {
      if (key->kind != Value::Kind::String) continue;
      if (key->text == "_parameters" || key->text == "_buffers" || key->text == "_modules") collect(item, path);
    }
  } else if (value->kind == Value::Kind::List || value->kind == Value::Kind::Tuple) {
    for (std::size_t i = 0; i < value->items.size(); ++i) collect(value->items[i], joined(integer_text(i)));
  }
}

}  // namespace

std::uint64_t build_budget(std::uint64_t file_bytes) {
  constexpr std::uint64_t kFloor = std::uint64_t{64} << 20, kPerFileByte = 64, kCap = std::uint64_t{4} << 30;
  return file_bytes >= (kCap - kFloor) / kPerFileByte ? kCap : kFloor + kPerFileByte * file_bytes;
}

std::vector<PickledTensor> pickled_tensors(std::string_view pickle, const std::string& where, std::uint64_t file_bytes,
                                           std::string* object_summary) {
  BuildBudget budget(where, file_bytes);
  PickleReader reader(pickle, where, budget);
  std::vector<PickledTensor> tensors;
  std::set<const Value*> walked;
  const auto object = reader.run();
  collect(object, "", tensors, walked, 0, budget);
  if (object_summary) *object_summary = summary(*object);
  return tensors;
}

namespace {

// The legacy format's first pickle: PROTO (2 by default; torch.save's pickle_protocol 3 to 5 too),
// a FRAME from protocol 4 on, the 10-byte integer 0x1950a86a20f9469cfc6c (LONG1), STOP.
constexpr unsigned char kLegacyMagic[] = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};
constexpr std::int64_t kLegacyProtocol = 1001;

// Where the legacy format's first pickle ends, or 0 when the bytes do not begin with it.
std::size_t legacy_magic_end(std::string_view bytes) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x80) return 0;
  const auto protocol = static_cast<unsigned char>(bytes[1]);
  if (protocol < 2 || protocol > 5) return 0;
  std::size_t at = 2;
  if (bytes.size() > at && static_cast<unsigned char>(bytes[at]) == 0x95) at += 9;  // FRAME and its length
  if (bytes.size() < at + sizeof kLegacyMagic || std::memcmp(bytes.data() + at, kLegacyMagic, sizeof kLegacyMagic) != 0) {
    return 0;
  }
  return at + sizeof kLegacyMagic;
}

const Value* dict_entry(const Value& dict, const std::string& key) {
  for (const auto& [k, v] : dict.entries) {
    if (k->kind == Value::Kind::String && k->text == key) return v.get();
  }
  return nullptr;
}

}  // namespace

bool looks_like_legacy_torch_save(std::string_view first_bytes) { return legacy_magic_end(first_bytes) > 0; }

LegacyTorchSave legacy_torch_save(std::string_view file, const std::string& where) {
  if (!looks_like_legacy_torch_save(file)) throw EnvironmentError(where + " does not begin with the legacy torch.save magic number");
  BuildBudget budget(where, file.size(), "one of its pickles (legacy torch.save format)");
  std::size_t at = legacy_magic_end(file);
  // The pickles after the magic number; each reader's values live as long as the reader.
  const auto damaged = [&](const std::string& what) {
    return EnvironmentError(where + ": its header (legacy torch.save format) is damaged: " + what);
  };
  {
    PickleReader reader(file, where, budget, at);
    const auto protocol = reader.run();
    if (protocol->kind != Value::Kind::Integer || protocol->integer != kLegacyProtocol) {
      throw damaged("protocol version " + (protocol->kind == Value::Kind::Integer ? integer_text(protocol->integer) : "(not a number)") +
                    ", where torch.save writes 1001");
    }
    at = reader.end();
  }
  {
    PickleReader reader(file, where, budget, at);
    const auto facts = reader.run();
    const Value* little = facts->kind == Value::Kind::Dict ? dict_entry(*facts, "little_endian") : nullptr;
    if (!little || little->kind != Value::Kind::Boolean) throw damaged("its machine facts do not say the byte order");
    if (!little->integer) {
      throw EnvironmentError(where + " was written on a big-endian machine; lmkit reads little-endian torch.save files "
                             "(load it there and save it again, or as safetensors)");
    }
    at = reader.end();
  }
  LegacyTorchSave result;
  std::map<std::string, torch::ScalarType> dtypes;
  {
    PickleReader reader(file, where, budget, at);
    std::set<const Value*> walked;
    const auto object = reader.run();
    collect(object, "", result.tensors, walked, 0, budget);
    result.object_summary = summary(*object);
    dtypes = reader.storage_dtypes();
    at = reader.end();
  }
  std::vector<std::string> keys;
  {
    PickleReader reader(file, where, budget, at);
    const auto list = reader.run();
    if (list->kind != Value::Kind::List) throw damaged("its list of storage keys is not a list");
    for (const auto& key : list->items) {
      if (key->kind != Value::Kind::String) throw damaged("a storage key that is not a string");
      keys.push_back(key->text);
    }
    at = reader.end();
  }
  // Then each listed storage, in the list's order: its element count (int64, little-endian) and
  // its elements.
  std::set<std::string> seen;
  for (const auto& key : keys) {
    const auto dtype = dtypes.find(key);
    if (dtype == dtypes.end()) {
      throw EnvironmentError(where + ": its list of storages names '" + key + "', which its pickle does not use: the file is damaged");
    }
    if (!seen.insert(key).second) {
      throw EnvironmentError(where + ": its list of storages names '" + key + "' twice: the file is damaged");
    }
    if (file.size() - at < 8) {
      throw EnvironmentError(where + " is truncated: the storage '" + key + "' needs its element count at byte " +
                             integer_text(at) + " of " + integer_text(file.size()));
    }
    std::uint64_t count = 0;
    for (int i = 7; i >= 0; --i) count = (count << 8) | static_cast<unsigned char>(file[at + static_cast<std::size_t>(i)]);
    at += 8;
    const auto element = static_cast<std::uint64_t>(c10::elementSize(dtype->second));
    const auto left = file.size() - at;
    if (count > left / element) {
      throw EnvironmentError(where + " is truncated or damaged: the storage '" + key + "' claims " + integer_text(count) +
                             " elements of " + integer_text(element) + " bytes, and " + integer_text(left) + " bytes are left");
    }
    result.storages.push_back({key, dtype->second, static_cast<std::uint64_t>(at), static_cast<std::int64_t>(count)});
    at += count * element;
  }
  for (const auto& [key, dtype] : dtypes) {
    if (!seen.count(key)) {
      throw EnvironmentError(where + ": its pickle uses the storage '" + key + "', which the file does not hold: it is truncated or damaged");
    }
  }
  return result;
}

}  // namespace lmkit::tensor_files
