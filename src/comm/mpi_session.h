// The MPI bootstrap: one per process, created first in main() and destroyed last.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/launcher.h"
#include "comm/mpi_communicator.h"

namespace sb {

class MpiSession {
 public:
  // MPI_Init_thread(FUNNELED): only the main thread calls MPI. Sets the process identity used by error
  // messages, makes MPI errors return to CHECK_MPI (instead of MPI aborting with its own message), and
  // learns the node layout. If MPI is already initialised (a test harness), it is adopted and not
  // finalised here.
  MpiSession(int& argc, char**& argv);
  ~MpiSession();  // finalize()
  // MPI_Finalize (where this session initialised MPI), timed as the shutdown part mpi_finalize. Only the
  // destructor may follow; a second call does nothing.
  void finalize();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  MpiCommunicator& world() { return *world_; }
  int rank() const { return world_->rank(); }
  int size() const { return world_->size(); }
  int local_rank() const { return local_rank_; }  // rank among the ranks on this node
  int local_size() const { return local_size_; }  // ranks on this node
  int node_count() const { return node_count_; }  // distinct hosts in the job
  const std::string& host() const { return hosts_[static_cast<size_t>(rank())]; }
  const std::vector<std::string>& hosts() const { return hosts_; }  // per world rank, in rank order
  const LauncherInfo& launcher() const { return launcher_; }

 private:
  bool finalize_ = false;
  std::unique_ptr<MpiCommunicator> world_;
  int local_rank_ = 0;
  int local_size_ = 1;
  int node_count_ = 1;
  std::vector<std::string> hosts_;
  LauncherInfo launcher_;
};

// The MPI library's own version line, e.g. "Open MPI v4.1.4, package: ...".
std::string mpi_library_version();

// This host's name as MPI reports it.
std::string processor_name();

}  // namespace sb
