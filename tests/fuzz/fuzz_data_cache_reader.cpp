// Fuzzes the reader of the decoded-data cache (decode_data_cache, src/data/data_cache.h).
//
// Input: one mode byte, then the file's bytes.
//   mode bit 0  1: the header's payload length is set to the bytes that follow the header, so that
//                  mutations get past the length check
//   mode bit 1  1: the header's CRC-32 is replaced by that of the payload, so that mutations reach the
//                  field checks behind it
// Allowed outcomes: data that holds every invariant of check_dataset (which aborts, a finding, when one
// breaks) and survives a round trip through encode_data_cache, or a refusal with a reason.
#include <zlib.h>

#include <cstddef>
#include <cstdint>

#include "data/data_cache.h"
#include "fuzz_util.h"

using namespace sb;

namespace {

constexpr size_t kKeyLengthAt = 8 + 4;  // after the magic and the version

uint32_t read_le32(const fuzz::Bytes& b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b[at + static_cast<size_t>(i)]) << (8 * i);
  return v;
}

void write_le(fuzz::Bytes& b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

// Where the payload length field starts (after the key), or 0 when the bytes end before the CRC.
size_t length_field(const fuzz::Bytes& file) {
  if (file.size() < kKeyLengthAt + 4) return 0;
  const uint64_t at = kKeyLengthAt + 4 + uint64_t{read_le32(file, kKeyLengthAt)};
  return at + 8 + 4 <= file.size() ? static_cast<size_t>(at) : 0;
}

bool same_split(const Dataset& a, const Dataset& b) {
  return a.name == b.name && a.channels == b.channels && a.height == b.height && a.width == b.width &&
         a.num_classes == b.num_classes && a.mean == b.mean && a.std == b.std && a.images == b.images && a.labels == b.labels;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  fuzz::Bytes file(data + 1, data + size);
  if (const size_t at = length_field(file); at != 0) {
    const size_t payload_at = at + 8 + 4;
    const size_t payload = file.size() - payload_at;
    if (mode & 1) write_le(file, at, payload, 8);
    if (mode & 2) {
      const uLong crc = crc32(crc32(0L, Z_NULL, 0), file.data() + payload_at, static_cast<uInt>(payload));
      write_le(file, at + 8, crc, 4);
    }
  }
  std::string why;
  const std::optional<DataCacheFile> decoded = decode_data_cache(file.data(), file.size(), &why);
  if (!decoded) {
    SB_FUZZ_REQUIRE(!why.empty());
    return 0;
  }
  check_dataset(decoded->data.train);
  check_dataset(decoded->data.test);
  SB_FUZZ_REQUIRE(decoded->data.train.size() > 0 && decoded->data.test.size() > 0);
  const fuzz::Bytes again = encode_data_cache(decoded->key, decoded->data);
  std::string why_again;
  const std::optional<DataCacheFile> round = decode_data_cache(again.data(), again.size(), &why_again);
  SB_FUZZ_REQUIRE(round.has_value());
  SB_FUZZ_REQUIRE(round->key == decoded->key);
  SB_FUZZ_REQUIRE(same_split(round->data.train, decoded->data.train) && same_split(round->data.test, decoded->data.test));
  return 0;
}
