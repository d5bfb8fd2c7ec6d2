// Every rank must run the same configuration. A rank launched with other arguments would otherwise
// deadlock or silently train a different model; comparing a hash catches it before any expensive work.
#pragma once
#include <cstdint>
#include <string_view>

#include "comm/communicator.h"

namespace sb {

// 64-bit FNV-1a of the bytes of `text`.
uint64_t fnv1a_64(std::string_view text);

// Collective. Throws sb::UserError on every rank, naming the lowest rank whose text differs from
// rank 0's, when the texts (e.g. the canonical config JSON) are not all equal.
void check_same_on_all_ranks(Communicator& comm, std::string_view config_text);

}  // namespace sb
