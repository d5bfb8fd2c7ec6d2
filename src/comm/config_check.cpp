#include "comm/config_check.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"

namespace sb {

uint64_t fnv1a_64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV offset basis
  for (unsigned char byte : text) {
    hash ^= byte;
    hash *= 0x100000001b3ull;  // FNV prime
  }
  return hash;
}

void check_same_on_all_ranks(Communicator& comm, std::string_view config_text) {
  const std::vector<uint64_t> hashes = comm.allgather(fnv1a_64(config_text));
  for (size_t r = 1; r < hashes.size(); ++r) {
    if (hashes[r] == hashes[0]) continue;
    char message[256];
    std::snprintf(message, sizeof message,
                  "rank %zu's configuration differs from rank 0's (hash %016" PRIx64 " vs %016" PRIx64
                  "); launch every rank with the same arguments",
                  r, hashes[r], hashes[0]);
    throw AgreedError(message, comm.size(), comm.rank() == 0);  // every rank compared the same hashes
  }
}

}  // namespace sb
