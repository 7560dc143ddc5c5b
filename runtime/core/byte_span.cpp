#include "runtime/core/byte_span.h"

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit {

std::string_view ByteSpan::bytes(std::uint64_t offset, std::uint64_t length, const std::string& what) const {
  const std::uint64_t size = bytes_.size();
  if (offset > size || length > size - offset) {
    throw EnvironmentError(where_ + " is truncated or damaged: " + what + " needs bytes [" + integer_text(offset) + ", " +
                           integer_text(offset) + " + " + integer_text(length) + ") of " + whole_ + " of " +
                           integer_text(size) + " bytes");
  }
  return bytes_.substr(offset, length);
}

}  // namespace lmkit
