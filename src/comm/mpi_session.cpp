#include "comm/mpi_session.h"

#include "comm/collective_watchdog.h"
#include "comm/string_collectives.h"
#include "core/check.h"
#include "core/log.h"
#include "core/shutdown_clock.h"
#include "core/startup_clock.h"

namespace sb {

MpiSession::MpiSession(int& argc, char**& argv) {
  add_startup_seconds(StartupPart::launch, seconds_since_process_start());
  StartupSpan mpi_startup(StartupPart::mpi);
  int initialized = 0;
  CHECK_MPI(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    finalize_ = true;
    if (provided < MPI_THREAD_FUNNELED)
      log_all("warning: the MPI library provides thread level %d, below MPI_THREAD_FUNNELED\n", provided);
  }
  // Errors come back to CHECK_MPI, which names the rank, host and call before aborting the job.
  CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  world_ = MpiCommunicator::world();
  init_collective_watchdog();
  const std::string host = processor_name();
  set_process_identity(world_->rank(), host, world_->size());

  const std::unique_ptr<MpiCommunicator> node = world_->split_node_local();
  local_rank_ = node->rank();
  local_size_ = node->size();
  hosts_ = allgather_strings(*world_, host);
  // Nodes as MPI sees them (shared memory), which holds even where containers repeat a host name.
  node_count_ = world_->allreduce_sum(local_rank_ == 0 ? 1 : 0);
  launcher_ = detect_launcher();
}

MpiSession::~MpiSession() { finalize(); }

void MpiSession::finalize() {
  world_.reset();
  if (!finalize_) return;
  finalize_ = false;
  const ShutdownSpan finalize_shutdown(ShutdownPart::mpi_finalize);
  finalize_collective_watchdog();
  CHECK_MPI(MPI_Finalize());
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  CHECK_MPI(MPI_Get_library_version(text, &length));
  std::string version(text, static_cast<size_t>(length));
  const size_t end = version.find_first_of("\r\n");  // MPICH's spans many lines; the first names it
  if (end != std::string::npos) version.resize(end);
  while (!version.empty() && (version.back() == ' ' || version.back() == '\0')) version.pop_back();
  return version;
}

std::string processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  CHECK_MPI(MPI_Get_processor_name(name, &length));
  return std::string(name, static_cast<size_t>(length));
}

}  // namespace sb
