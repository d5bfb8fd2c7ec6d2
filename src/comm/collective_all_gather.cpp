// All-gather: every rank ends with every rank's count / ranks elements, in rank order. busbw factor
// (n-1)/n: the spreading half of an all-reduce.
#include "comm/collective.h"
#include "comm/mpi_collective_call.h"

namespace sb {
namespace {

double factor(int ranks) { return static_cast<double>(ranks - 1) / ranks; }

double expected(const CheckPattern& pattern, int, int64_t per_rank, int64_t j) {
  return pattern.value(static_cast<int>(j / per_rank), j % per_rank);
}

void run_mpi(const MpiCollectiveCall& c) {
  const int n = static_cast<int>(c.per_rank);
  // In place, each rank's block of the receive buffer is its input (MPI and NCCL alike).
  const void* send = c.send ? c.send : MPI_IN_PLACE;
  const int send_n = c.send ? n : 0;
  run_mpi_collective(
      c.comm, "an MPI allgather", [&] { return MPI_Allgather(send, send_n, c.type, c.receive, n, c.type, c.comm); },
      [&](MPI_Request* r) { return MPI_Iallgather(send, send_n, c.type, c.receive, n, c.type, c.comm, r); });
}

}  // namespace

const Collective kAllGather{CollectiveKind::AllGather, "all-gather", "none", -1, factor, multiple_of_ranks, split_count,
                            split_count, whole_count, at_rank_block, result_at_start, expected, run_mpi};

}  // namespace sb
