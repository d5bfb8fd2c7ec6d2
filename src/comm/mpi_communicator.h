// The Communicator over an MPI communicator. Host-side collectives for the CPU backend, for timings
// and metadata, and the bootstrap of the NCCL communicator.
#pragma once
#include <mpi.h>

#include <memory>

#include "comm/communicator.h"

namespace sb {

MPI_Datatype mpi_datatype(ElementType type);

class MpiCommunicator final : public Communicator {
 public:
  // MPI_COMM_WORLD, wrapped without owning it (MPI frees it at MPI_Finalize).
  static std::unique_ptr<MpiCommunicator> world();
  ~MpiCommunicator() override;  // frees the communicator when this object created it

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  // The ranks of this communicator that share this rank's node (MPI_Comm_split_type SHARED):
  // its rank() is the local rank, its size() the local size.
  std::unique_ptr<MpiCommunicator> split_node_local();

  // For libraries that bootstrap over MPI; the handle stays owned by this object.
  MPI_Comm handle() const { return comm_; }

 protected:
  void allreduce_elements(void* data, size_t count, ElementType type, ReduceOp op) override;
  void allreduce_elements_out_of_place(const void* send, void* received, size_t count, ElementType type,
                                       ReduceOp op) override;
  void broadcast_elements(void* data, size_t count, ElementType type, int root) override;
  void gather_elements(const void* mine, size_t count, void* all, ElementType type, int root) override;
  void allgather_elements(const void* mine, size_t count, void* all, ElementType type) override;

 private:
  MpiCommunicator(MPI_Comm comm, bool owned);
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace sb
