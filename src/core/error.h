// Errors that reach the user as sentences, and the fatal path for failed library calls.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>

namespace sb {

// Bad input from the user (an option, a file, a value). Caught by the CLI, printed by rank 0 as one
// sentence, and turned into a non-zero exit. Never used for internal bugs or failed library calls.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A UserError that every rank of one communicator raised together (run_collectively, check_on_root), so
// those ranks can leave without waiting for each other. `ranks` is the size of that communicator; the
// job may end quietly only when it is the whole job. `speaker` is true on its rank 0, which prints.
class AgreedError : public UserError {
 public:
  AgreedError(const std::string& message, int ranks, bool speaker) : UserError(message), ranks_(ranks), speaker_(speaker) {}
  int ranks() const { return ranks_; }
  bool speaker() const { return speaker_; }

 private:
  int ranks_;
  bool speaker_;
};

// Who this process is, for error messages, and the size of its job (0: not known), which decides how a
// fatal error ends it. Set once by the MPI bootstrap.
void set_process_identity(int rank, const std::string& host, int world_size = 0);
int process_rank();             // -1 before the bootstrap
const std::string& process_host();

// Called before the job is aborted, in reverse registration order (e.g. ncclCommAbort).
void add_abort_hook(std::function<void()> hook);

// Prints "[rank R on HOST] FILE:LINE: CALL failed: MESSAGE", runs the abort hooks, then aborts the whole
// job (MPI_Abort when MPI is up and the job has more than one process, so that no rank hangs in a
// collective; a one-process job just exits with the code).
[[noreturn]] void fatal_call(const char* file, int line, const char* call, const std::string& message);

// Aborts the whole job with a plain message (for invariants that can't hold).
[[noreturn]] void fatal(const std::string& message);

// The sentence of an error that every rank of the job met, or that ends a one-process job:
// "scalebench: error: MESSAGE". Such a job ends without MPI_Abort: it finalizes MPI and exits with its
// code, so that no launcher banner follows the sentence.
void print_error(const std::string& message);

// `message` without a leading "rank R: " (a message that already names this rank).
std::string without_rank_prefix(const std::string& message, int rank);

// The end of an error that this rank met alone in a job of several ranks: prints "scalebench: error on
// rank R (HOST): MESSAGE" (the rank named once), then aborts the whole job with `exit_code`, since the
// other ranks may be waiting in a collective.
[[noreturn]] void abort_job_after_error(const std::string& message, int exit_code);

// Ends the job after an AgreedError that only part of the job raised: its speaker prints the sentence,
// the others give it a moment to do so, and every one of them aborts the job.
[[noreturn]] void abort_job_after_agreed_error(const AgreedError& error, int exit_code);

// The sentence for an exception that reached the top of a rank: its message, with a hint for the kinds
// a user can act on (out of memory). Call inside a catch block.
std::string describe_current_exception();

// Makes std::terminate (an exception thrown where nothing catches it: a noexcept function, a thread)
// end the job with the rank's sentence instead of a bare "terminate called" and a backtrace.
void install_terminate_handler();

}  // namespace sb
