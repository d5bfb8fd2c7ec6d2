// Reduce-scatter (sum): rank k ends with block k (count / ranks elements) of the element-wise sum of every
// rank's whole array. busbw factor (n-1)/n: the reduction half of an all-reduce.
#include "comm/collective.h"
#include "comm/mpi_collective_call.h"

namespace sb {
namespace {

double factor(int ranks) { return static_cast<double>(ranks - 1) / ranks; }

double expected(const CheckPattern& pattern, int rank, int64_t per_rank, int64_t j) {
  return pattern.expected_sum(rank * per_rank + j);
}

void run_mpi(const MpiCollectiveCall& c) {
  const int n = static_cast<int>(c.per_rank);
  const void* send = c.send ? c.send : MPI_IN_PLACE;
  run_mpi_collective(
      c.comm, "an MPI reduce-scatter", [&] { return MPI_Reduce_scatter_block(send, c.receive, n, c.type, MPI_SUM, c.comm); },
      [&](MPI_Request* r) { return MPI_Ireduce_scatter_block(send, c.receive, n, c.type, MPI_SUM, c.comm, r); });
}

// In place, MPI leaves the block at the start of the buffer; NCCL at the rank's own block.
int64_t result_offset(int rank, int64_t per_rank, bool mpi) { return mpi ? 0 : rank * per_rank; }

}  // namespace

const Collective kReduceScatter{CollectiveKind::ReduceScatter, "reduce-scatter", "sum", -1, factor, multiple_of_ranks,
                                split_count, whole_count, split_count, at_start, result_offset, expected, run_mpi};

}  // namespace sb
