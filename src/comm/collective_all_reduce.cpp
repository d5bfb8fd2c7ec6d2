// All-reduce (sum): every rank ends with the element-wise sum of every rank's whole array.
// busbw factor 2(n-1)/n: a ring sends each element n-1 times to reduce it and n-1 times to spread it.
#include "comm/collective.h"
#include "comm/mpi_collective_call.h"

namespace sb {
namespace {

double factor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

double expected(const CheckPattern& pattern, int, int64_t, int64_t j) { return pattern.expected_sum(j); }

void run_mpi(const MpiCollectiveCall& c) {
  const int n = static_cast<int>(c.per_rank);
  const void* send = c.send ? c.send : MPI_IN_PLACE;
  run_mpi_collective(c.comm, "an MPI allreduce", [&] { return MPI_Allreduce(send, c.receive, n, c.type, MPI_SUM, c.comm); },
                     [&](MPI_Request* r) { return MPI_Iallreduce(send, c.receive, n, c.type, MPI_SUM, c.comm, r); });
}

}  // namespace

const Collective kAllReduce{CollectiveKind::AllReduce, "all-reduce", "sum", -1, factor, whole_count, whole_count,
                            whole_count, whole_count, at_start, result_at_start, expected, run_mpi};

}  // namespace sb
