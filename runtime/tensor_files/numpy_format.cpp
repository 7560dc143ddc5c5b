#include "runtime/tensor_files/numpy_format.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::tensor_files {
namespace {

constexpr std::string_view kMagic{"\x93NUMPY", 6};

struct DescrName {
  const char* descr;  // without its byte-order character
  torch::ScalarType dtype;
};
constexpr DescrName kDescrs[] = {{"f8", torch::kFloat64}, {"f4", torch::kFloat32}, {"f2", torch::kFloat16},
                                 {"i8", torch::kInt64},   {"i4", torch::kInt32},   {"i2", torch::kInt16},
                                 {"i1", torch::kInt8},    {"u1", torch::kUInt8},   {"b1", torch::kBool}};

// Reads the header's Python literal: a dict of string keys whose values are strings, True/False
// or tuples of integers — what numpy.lib.format writes, and nothing more.
class HeaderReader {
 public:
  HeaderReader(std::string_view text, std::string where) : text_(text), where_(std::move(where)) {}

  void expect(char c) {
    skip_space();
    if (at_ >= text_.size() || text_[at_] != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  bool accept(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) return ++at_, true;
    return false;
  }
  std::string quoted() {
    skip_space();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) fail("expected a quoted string");
    const char quote = text_[at_++];
    const auto end = text_.find(quote, at_);
    if (end == std::string_view::npos) fail("a string is not closed");
    std::string value(text_.substr(at_, end - at_));
    at_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(at_, word.size()) == word) return at_ += word.size(), value;
    }
    fail("expected True or False");
  }
  std::vector<std::int64_t> integer_tuple() {
    expect('(');
    std::vector<std::int64_t> values;
    while (!accept(')')) {
      skip_space();
      std::int64_t value = 0;
      const auto start = at_;
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
        if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, text_[at_] - '0', &value)) {
          fail("a size does not fit 63 bits");
        }
        ++at_;
      }
      if (at_ == start) fail("expected a size (a non-negative integer)");
      values.push_back(value);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return values;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw EnvironmentError(where_ + ": its .npy header is not one NumPy writes (" + what + " at character " +
                           integer_text(at_ + 1) + " of: " + std::string(text_.substr(0, 200)) + ")");
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  std::string_view text_;
  std::string where_;
  std::size_t at_ = 0;
};

}  // namespace

bool looks_like_npy(std::string_view bytes) { return bytes.substr(0, kMagic.size()) == kMagic; }

ArrayEntry npy_header(std::string_view head, std::uint64_t total_size, const std::string& name, const std::string& where,
                      std::uint64_t& data_offset) {
  if (!looks_like_npy(head) || head.size() < 10) throw EnvironmentError(where + " is not a .npy array (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(head[6]);
  std::uint64_t header_size = 0;
  std::uint64_t prefix = 10;
  if (major == 1) {
    header_size = static_cast<unsigned char>(head[8]) | (static_cast<std::uint64_t>(static_cast<unsigned char>(head[9])) << 8);
  } else if (major == 2 || major == 3) {
    if (head.size() < 12) throw EnvironmentError(where + " is truncated inside its .npy header");
    for (int i = 3; i >= 0; --i) header_size = (header_size << 8) | static_cast<unsigned char>(head[8 + static_cast<std::size_t>(i)]);
    prefix = 12;
  } else {
    throw EnvironmentError(where + " is a .npy of format version " + integer_text(major) + " (lmkit reads 1.0 to 3.0)");
  }
  if (prefix + header_size > head.size()) {
    throw EnvironmentError(where + " is truncated inside its .npy header (" + integer_text(header_size) + " bytes claimed)");
  }
  HeaderReader reader(head.substr(prefix, header_size), where);
  std::string descr;
  bool fortran = false, have_descr = false, have_fortran = false, have_shape = false;
  ArrayEntry entry;
  entry.name = name;
  reader.expect('{');
  while (!reader.accept('}')) {
    const auto key = reader.quoted();
    reader.expect(':');
    if (key == "descr") {
      descr = reader.quoted();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = reader.boolean();
      have_fortran = true;
    } else if (key == "shape") {
      entry.shape = reader.integer_tuple();
      have_shape = true;
    } else {
      reader.fail("an unknown key '" + key + "'");
    }
    if (!reader.accept(',')) {
      reader.expect('}');
      break;
    }
  }
  if (!have_descr || !have_fortran || !have_shape) reader.fail("descr, fortran_order and shape are all needed");
  const bool one_byte = descr.size() == 3 && descr[0] == '|';
  if (descr.size() != 3 || (descr[0] != '<' && descr[0] != '=' && !one_byte)) {
    throw EnvironmentError(where + ": dtype '" + descr + "' is not one lmkit reads" +
                           (descr.size() == 3 && descr[0] == '>' ? " (big-endian: save it little-endian, a.astype(a.dtype.newbyteorder('<')))"
                                                                  : " (little-endian float64/32/16, int64/32/16/8, uint8, bool)"));
  }
  const auto found = std::find_if(std::begin(kDescrs), std::end(kDescrs), [&](const DescrName& d) { return descr.substr(1) == d.descr; });
  if (found == std::end(kDescrs)) {
    throw EnvironmentError(where + ": dtype '" + descr + "' is not one lmkit reads (little-endian float64/32/16, int64/32/16/8, uint8, bool)");
  }
  entry.dtype = found->dtype;
  entry.fortran_order = fortran;
  entry.byte_count = checked_byte_count(entry.shape, entry.dtype, where);
  data_offset = prefix + header_size;
  const std::uint64_t held = total_size > data_offset ? total_size - data_offset : 0;
  if (data_offset > total_size || entry.byte_count != held) {
    throw EnvironmentError(where + ": '" + descr + "' of shape " + format_shape(entry.shape) + " needs " +
                           integer_text(entry.byte_count) + " bytes of data, the file holds " + integer_text(held) +
                           (held < entry.byte_count ? ": it is truncated" : ": it is damaged (bytes after the array)"));
  }
  return entry;
}

std::string npy_image(const torch::Tensor& tensor, const std::string& name) {
  const auto found = std::find_if(std::begin(kDescrs), std::end(kDescrs), [&](const DescrName& d) { return d.dtype == tensor.scalar_type(); });
  if (found == std::end(kDescrs)) {
    throw UsageError("write_tensors: '" + name + "' has dtype " + std::string(c10::toString(tensor.scalar_type())) +
                     ", which NumPy has no type for: convert it first (t:float()), or write safetensors");
  }
  std::string shape = "(";
  for (std::int64_t d = 0; d < tensor.dim(); ++d) shape += integer_text(tensor.size(d)) + (tensor.dim() == 1 ? "," : d + 1 < tensor.dim() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + (found->descr[0] == 'b' || found->descr[1] == '1' ? "|" : "<") + found->descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Padded with spaces and a newline so that the data starts 64-byte aligned, as NumPy writes it.
  const bool version2 = header.size() + 11 + 63 >= 65536;
  const std::size_t prefix = version2 ? 12 : 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string image(kMagic);
  image += static_cast<char>(version2 ? 2 : 1);
  image += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i) image += static_cast<char>((header.size() >> (8 * i)) & 0xFFu);
  image += header;
  image += bytes_of(tensor);
  return image;
}

}  // namespace lmkit::tensor_files
