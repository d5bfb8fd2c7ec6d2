// Broadcast from rank 0: every rank ends with rank 0's whole array. busbw factor 1: all of it has to
// leave the root through the root's own link.
#include <cstring>

#include "comm/collective.h"
#include "comm/mpi_collective_call.h"

namespace sb {
namespace {

constexpr int kRoot = 0;

double factor(int) { return 1.0; }

double expected(const CheckPattern& pattern, int, int64_t, int64_t j) { return pattern.value(kRoot, j); }

void run_mpi(const MpiCollectiveCall& c) {
  const int n = static_cast<int>(c.per_rank);
  int size = 0;
  CHECK_MPI(MPI_Type_size(c.type, &size));
  // MPI's broadcast has one buffer. Out of place, the root's receive buffer gets its send buffer, as
  // ncclBroadcast's does, so that every rank's result lies in its receive buffer.
  if (c.send && c.rank == kRoot) std::memcpy(c.receive, c.send, static_cast<size_t>(n) * static_cast<size_t>(size));
  run_mpi_collective(c.comm, "an MPI broadcast", [&] { return MPI_Bcast(c.receive, n, c.type, kRoot, c.comm); },
                     [&](MPI_Request* r) { return MPI_Ibcast(c.receive, n, c.type, kRoot, c.comm, r); });
}

}  // namespace

const Collective kBroadcast{CollectiveKind::Broadcast, "broadcast", "none", kRoot, factor, whole_count, whole_count,
                            whole_count, whole_count, at_start, result_at_start, expected, run_mpi};

}  // namespace sb
