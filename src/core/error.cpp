#include "core/error.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <new>
#include <thread>
#include <vector>

#include "core/exit_codes.h"

namespace sb {
namespace {
int g_rank = -1;
int g_world_size = 0;  // 0: not known (before the bootstrap)
std::string g_host = "?";
std::vector<std::function<void()>>& abort_hooks() {
  static std::vector<std::function<void()>> hooks;
  return hooks;
}
// The hooks run on a thread of their own, given a few seconds: one may block for ever (ncclCommAbort
// while an NCCL kernel still waits for a peer that stopped), and the job must end all the same.
void run_abort_hooks_for_at_most(std::chrono::seconds limit) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread([done] {
    auto& hooks = abort_hooks();
    for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) (*it)();
    *done = true;
  }).detach();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!*done && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

[[noreturn]] void abort_job(int code) {
  run_abort_hooks_for_at_most(std::chrono::seconds(10));
  std::fflush(stdout);
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  // A job of one process ends by itself: MPI_Abort would only add the launcher's abort banner (or, for a
  // process started without mpirun, Open MPI's ORTE_ERROR_LOG lines) after the sentence.
  if (initialized && !finalized && g_world_size != 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}
}  // namespace

void set_process_identity(int rank, const std::string& host, int world_size) {
  g_rank = rank;
  g_host = host;
  g_world_size = world_size;
}
int process_rank() { return g_rank; }
const std::string& process_host() { return g_host; }

void add_abort_hook(std::function<void()> hook) { abort_hooks().push_back(std::move(hook)); }

void fatal_call(const char* file, int line, const char* call, const std::string& message) {
  std::fprintf(stderr, "[rank %d on %s] %s:%d: %s failed: %s\n", g_rank, g_host.c_str(), file, line, call,
               message.c_str());
  abort_job(kExitFailure);
}

void fatal(const std::string& message) {
  std::fprintf(stderr, "[rank %d on %s] fatal: %s\n", g_rank, g_host.c_str(), message.c_str());
  abort_job(kExitFailure);
}

void print_error(const std::string& message) { std::fprintf(stderr, "scalebench: error: %s\n", message.c_str()); }

std::string without_rank_prefix(const std::string& message, int rank) {
  const std::string prefix = "rank " + std::to_string(rank) + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

void abort_job_after_error(const std::string& message, int exit_code) {
  std::fprintf(stderr, "scalebench: error on rank %d (%s): %s\n", g_rank, g_host.c_str(),
               without_rank_prefix(message, g_rank).c_str());
  abort_job(exit_code);
}

void abort_job_after_agreed_error(const AgreedError& error, int exit_code) {
  if (error.speaker()) {
    print_error(error.what());
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // let the speaker's sentence out first
  }
  abort_job(exit_code);
}

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of host memory (std::bad_alloc); give each rank less data (--train-limit), run fewer ranks per node, "
           "or ask for more memory per rank";
  } catch (const std::exception& e) {
    return std::string("unexpected error: ") + e.what();
  } catch (...) {
    return "unexpected error: an exception of unknown type";
  }
}

namespace {
[[noreturn]] void terminate_with_sentence() {
  if (std::current_exception()) {
    try {
      std::rethrow_exception(std::current_exception());
    } catch (...) {
      abort_job_after_error(describe_current_exception(), kExitFailure);
    }
  }
  abort_job_after_error("std::terminate was called without an exception", kExitFailure);
}
}  // namespace

void install_terminate_handler() { std::set_terminate(terminate_with_sentence); }

}  // namespace sb
