// How every host collective runs: with the collective watchdog on (comm/collective_watchdog.h), started
// non-blocking and awaited under its watch; off, the blocking call as it is (MPI's own algorithms, no
// polling). MpiCommunicator's collectives and the `comm` sweep's MPI runner both call through it.
#pragma once
#include <mpi.h>

#include "comm/collective_watchdog.h"
#include "core/check.h"

namespace sb {

template <typename Blocking, typename Started>
void run_mpi_collective(MPI_Comm comm, const char* operation, Blocking blocking, Started started) {
  if (collective_timeout() <= 0) {
    CHECK_MPI(blocking());
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  CHECK_MPI(started(&request));
  wait_with_watchdog(
      [&] {
        int done = 0;
        CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
        return done != 0;
      },
      operation, comm);
}

}  // namespace sb
