// Fuzzes the reader of the on-disk cuDNN plan cache (decode_plan_file, src/nn/plan_store.h) and the
// decoder of an agreed plan choice (decode_choice).
//
// Input: one mode byte, then the file's bytes.
//   mode bit 0  0: the bytes as they are (most mutations then end at the checksum);
//               1: the last 4 bytes are replaced by the checksum of the others, so that mutations reach
//                  the field checks behind it
//   mode bit 1  1: also read the bytes as the words of an agreed choice (decode_choice)
// Allowed outcomes: a file (which must then survive a round trip through encode_plan_file) or a refusal
// with a reason. Anything else is a finding.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_util.h"
#include "nn/plan_store.h"

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
    const size_t body = file.size() - 4;
    const uint32_t crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), file.data(), static_cast<uInt>(body)));
    for (int i = 0; i < 4; ++i) file[body + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (8 * i));
  }
  std::string why;
  const std::optional<PlanFile> decoded = decode_plan_file(file.data(), file.size(), &why);
  if (decoded) {
    const fuzz::Bytes again = encode_plan_file(decoded->identity, decoded->entries);
    std::string why_again;
    const std::optional<PlanFile> round = decode_plan_file(again.data(), again.size(), &why_again);
    SB_FUZZ_REQUIRE(round.has_value());
    SB_FUZZ_REQUIRE(round->identity == decoded->identity && round->entries == decoded->entries);
    for (const auto& [key, record] : decoded->entries) SB_FUZZ_REQUIRE(!key.empty() && record.choice.engine >= 0);
  } else {
    SB_FUZZ_REQUIRE(!why.empty());
  }
  if (mode & 2) {
    std::vector<int32_t> words(file.size() / 4);
    if (!words.empty()) std::memcpy(words.data(), file.data(), words.size() * 4);
    if (const std::optional<PlanChoice> choice = decode_choice(words)) SB_FUZZ_REQUIRE(encode_choice(*choice) == words);
  }
  return 0;
}
