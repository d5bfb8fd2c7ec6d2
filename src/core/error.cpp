#include "core/error.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace sb {
namespace {
int g_rank = -1;
std::string g_host = "?";
std::vector<std::function<void()>>& abort_hooks() {
  static std::vector<std::function<void()>> hooks;
  return hooks;
}
[[noreturn]] void abort_job(int code) {
  auto& hooks = abort_hooks();
  for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) (*it)();
  std::fflush(stdout);
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}
}  // namespace

void set_process_identity(int rank, const std::string& host) {
  g_rank = rank;
  g_host = host;
}
int process_rank() { return g_rank; }
const std::string& process_host() { return g_host; }

void add_abort_hook(std::function<void()> hook) { abort_hooks().push_back(std::move(hook)); }

void fatal_call(const char* file, int line, const char* call, const std::string& message) {
  std::fprintf(stderr, "[rank %d on %s] %s:%d: %s failed: %s\n", g_rank, g_host.c_str(), file, line, call,
               message.c_str());
  abort_job(3);
}

void fatal(const std::string& message) {
  std::fprintf(stderr, "[rank %d on %s] fatal: %s\n", g_rank, g_host.c_str(), message.c_str());
  abort_job(3);
}

}  // namespace sb
