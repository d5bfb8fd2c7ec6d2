// Fuzzes the reader of the peak-rate cache (decode_peak_rate, src/train/engines/peak_rate_cache.h).
//
// Input: one mode byte, then the file's bytes.
//   mode bit 0  1: the last 4 bytes are replaced by the CRC-32 of those before them, so that mutations
//                  get past the checksum to the field checks
// Allowed outcomes: a key of at most the reader's bound and a finite rate above zero that survive a round
// trip through encode_peak_rate, or a refusal with a reason.
#include <zlib.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_util.h"
#include "train/engines/peak_rate_cache.h"

using namespace sb;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  fuzz::Bytes file(data + 1, data + size);
  if ((mode & 1) && file.size() >= 4) {
    const size_t at = file.size() - 4;
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), file.data(), static_cast<uInt>(at));
    for (int i = 0; i < 4; ++i) file[at + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (8 * i));
  }
  std::string why;
  const std::optional<PeakRateRecord> record = decode_peak_rate(file.data(), file.size(), &why);
  if (!record) {
    SB_FUZZ_REQUIRE(!why.empty());
    return 0;
  }
  SB_FUZZ_REQUIRE(std::isfinite(record->tflops) && record->tflops > 0);
  const fuzz::Bytes again = encode_peak_rate(record->key, record->tflops);
  SB_FUZZ_REQUIRE(again == file);  // one encoding per record: the reader accepts nothing the writer can't write
  return 0;
}
