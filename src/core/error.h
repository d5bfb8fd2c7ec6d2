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

// Who this process is, for error messages. Set once by the MPI bootstrap.
void set_process_identity(int rank, const std::string& host);
int process_rank();             // -1 before the bootstrap
const std::string& process_host();

// Called before the job is aborted, in reverse registration order (e.g. ncclCommAbort).
void add_abort_hook(std::function<void()> hook);

// Prints "[rank R on HOST] FILE:LINE: CALL failed: MESSAGE", runs the abort hooks, then aborts the whole
// job (MPI_Abort when MPI is up, so that no rank hangs in a collective).
[[noreturn]] void fatal_call(const char* file, int line, const char* call, const std::string& message);

// Aborts the whole job with a plain message (for invariants that can't hold).
[[noreturn]] void fatal(const std::string& message);

}  // namespace sb
