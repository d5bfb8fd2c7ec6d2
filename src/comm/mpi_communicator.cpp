#include "comm/mpi_communicator.h"

#include <climits>
#include <string>

#include "comm/mpi_collective_call.h"
#include "core/check.h"

namespace sb {
namespace {

// MPI counts are int. Buffers past 2^31 elements are far beyond anything we reduce on the host.
int mpi_count(size_t count) {
  if (count > static_cast<size_t>(INT_MAX))
    fatal("a host collective of " + std::to_string(count) + " elements exceeds MPI's int count");
  return static_cast<int>(count);
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
  }
  fatal("unknown ReduceOp");
}

}  // namespace

MPI_Datatype mpi_datatype(ElementType type) {
  switch (type) {
    case ElementType::Char: return MPI_CHAR;
    case ElementType::UInt8: return MPI_UINT8_T;
    case ElementType::Int32: return MPI_INT32_T;
    case ElementType::Int64: return MPI_INT64_T;
    case ElementType::UInt64: return MPI_UINT64_T;
    case ElementType::Float32: return MPI_FLOAT;
    case ElementType::Float64: return MPI_DOUBLE;
  }
  fatal("unknown ElementType");
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  CHECK_MPI(MPI_Comm_size(comm_, &size_));
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(MPI_COMM_WORLD, false));
}

MpiCommunicator::~MpiCommunicator() {
  if (!owned_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) CHECK_MPI(MPI_Comm_free(&comm_));  // after MPI_Finalize MPI has freed it already
}

void MpiCommunicator::barrier() {
  run_mpi_collective(comm_, "an MPI barrier", [&] { return MPI_Barrier(comm_); },
                     [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm child = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &child));
  if (child == MPI_COMM_NULL) return nullptr;
  return std::unique_ptr<Communicator>(new MpiCommunicator(child, true));
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::split_node_local() {
  MPI_Comm child = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &child));
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(child, true));
}

void MpiCommunicator::allreduce_elements(void* data, size_t count, ElementType type, ReduceOp op) {
  if (count == 0) return;
  const int n = mpi_count(count);
  run_mpi_collective(comm_, "an MPI allreduce", [&] { return MPI_Allreduce(MPI_IN_PLACE, data, n, mpi_datatype(type), mpi_op(op), comm_); },
                     [&](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, data, n, mpi_datatype(type), mpi_op(op), comm_, r); });
}

void MpiCommunicator::allreduce_elements_out_of_place(const void* send, void* received, size_t count, ElementType type,
                                                      ReduceOp op) {
  if (count == 0) return;
  const int n = mpi_count(count);
  run_mpi_collective(comm_, "an MPI allreduce", [&] { return MPI_Allreduce(send, received, n, mpi_datatype(type), mpi_op(op), comm_); },
                     [&](MPI_Request* r) { return MPI_Iallreduce(send, received, n, mpi_datatype(type), mpi_op(op), comm_, r); });
}

void MpiCommunicator::broadcast_elements(void* data, size_t count, ElementType type, int root) {
  if (count == 0) return;
  const int n = mpi_count(count);
  run_mpi_collective(comm_, "an MPI broadcast", [&] { return MPI_Bcast(data, n, mpi_datatype(type), root, comm_); },
                     [&](MPI_Request* r) { return MPI_Ibcast(data, n, mpi_datatype(type), root, comm_, r); });
}

void MpiCommunicator::gather_elements(const void* mine, size_t count, void* all, ElementType type, int root) {
  const MPI_Datatype datatype = mpi_datatype(type);
  const int n = mpi_count(count);
  run_mpi_collective(comm_, "an MPI gather", [&] { return MPI_Gather(mine, n, datatype, all, n, datatype, root, comm_); },
                     [&](MPI_Request* r) { return MPI_Igather(mine, n, datatype, all, n, datatype, root, comm_, r); });
}

void MpiCommunicator::allgather_elements(const void* mine, size_t count, void* all, ElementType type) {
  const MPI_Datatype datatype = mpi_datatype(type);
  const int n = mpi_count(count);
  run_mpi_collective(comm_, "an MPI allgather", [&] { return MPI_Allgather(mine, n, datatype, all, n, datatype, comm_); },
                     [&](MPI_Request* r) { return MPI_Iallgather(mine, n, datatype, all, n, datatype, comm_, r); });
}

}  // namespace sb
