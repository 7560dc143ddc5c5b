// CRC-32C against the published check value and RFC 3720's (iSCSI) test vectors, and TFRecord's mask.
#include "runtime/core/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lmkit {
namespace {

TEST(Crc32cTest, StandardVectors) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xE3069283u);  // the catalogue's check value
  std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xFF), ascending(32);
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720, B.4
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
  // Continued over pieces, the same as at once.
  EXPECT_EQ(crc32c(check.data() + 4, 5, crc32c(check.data(), 4)), 0xE3069283u);
}

TEST(Crc32cTest, MaskedAsTfRecordStoresIt) {
  const std::string check = "123456789";
  // ((crc >> 15) | (crc << 17)) + 0xa282ead8, modulo 2^32.
  EXPECT_EQ(masked_crc32c(check.data(), check.size()), 0xC78AB0E5u);
}

}  // namespace
}  // namespace lmkit
