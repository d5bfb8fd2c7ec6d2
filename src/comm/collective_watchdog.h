// The collective watchdog: a rank that has waited --collective-timeout seconds in one collective (an MPI
// collective, or the host's wait for an NCCL operation) ends the job with one sentence naming the
// operation, the training position and the ranks that did not arrive, as PyTorch's NCCL watchdog does.
// Without it a stopped rank (SIGSTOP, a hung GPU, a dead node MPI did not notice) stalls the job forever.
//
// Who did not arrive: the rank that times out sends a roll call to every member of the communicator over
// a private duplicate of MPI_COMM_WORLD. Every rank that is itself waiting in a collective answers it
// while it waits; the members that do not answer within a grace period (a tenth of the timeout, 2 to
// 10 s) are named. Their state is unknown to the others: stopped, hung, or busy outside any collective.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>

namespace sb {

// Collective over MPI_COMM_WORLD, once, after MPI_Init: creates the roll-call communicator.
void init_collective_watchdog();
// Frees it before MPI_Finalize.
void finalize_collective_watchdog();

// Seconds a rank may wait in one collective; 0 turns the watchdog off (the default until set).
void set_collective_timeout(double seconds);
double collective_timeout();

// Where training is, for the message; epoch < 0 means "before training" (set by the trainer).
void set_collective_position(int epoch, int64_t step);

// Waits until `done()` returns true, polling; while waiting, answers other ranks' roll calls. After the
// timeout it takes the roll call of `members` and aborts the job with the sentence. `operation` names
// what is awaited, e.g. "MPI allreduce" or "the NCCL gradient all-reduce".
void wait_with_watchdog(const std::function<bool()>& done, const char* operation, MPI_Comm members);

}  // namespace sb
