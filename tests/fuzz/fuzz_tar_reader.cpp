// Fuzzes the tar shard reader and WebDataset's sample grouping on a hostile shard.
//
// Input: one mode byte, then the shard's bytes.
//   mode bit 0  0: ShardSampleReader (samples: an image and a .cls each), 1: TarReader (members)
//   mode bit 1  1: a 512-byte read buffer (every header and member crosses refills), 0: the default 8 MiB
//   mode bit 2  1: with bit 0 clear, the index of --data tars: (images located, not read, seeks past them)
// Allowed outcomes: members or samples, or sb::UserError. Anything else is a finding.
#include <cstddef>
#include <cstdint>

#include "data/image/shard_samples.h"
#include "data/image/tar_reader.h"
#include "fuzz_util.h"

using namespace sb;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file("sb_fuzz_tar");
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const size_t shard_bytes = size - 1;
  file.write(data + 1, shard_bytes);
  const size_t buffer = (mode & 2) ? 512 : kTarReadBuffer;
  try {
    if ((mode & 5) == 4) {
      ShardSampleReader reader(file.path(), true);
      ShardSample sample;
      while (reader.next(sample)) {
        SB_FUZZ_REQUIRE(sample.label >= 0 && sample.image.empty());
        SB_FUZZ_REQUIRE(sample.image_offset <= shard_bytes && sample.image_size <= shard_bytes - sample.image_offset);
      }
    } else if ((mode & 1) == 0) {
      ShardSampleReader reader(file.path(), buffer);
      ShardSample sample;
      while (reader.next(sample)) {
        SB_FUZZ_REQUIRE(sample.label >= 0);
        SB_FUZZ_REQUIRE(!sample.key.empty() && !sample.image_member.empty());
        SB_FUZZ_REQUIRE(sample.image.size() <= shard_bytes && sample.offset < shard_bytes);
      }
    } else {
      TarReader reader(file.path(), buffer);
      TarMember member;
      while (reader.next(member)) SB_FUZZ_REQUIRE(member.data.size() <= shard_bytes && member.offset < shard_bytes);
    }
  } catch (const UserError& e) {
    fuzz::expected(e);
  }
  return 0;
}
