// The device-side communicator of the CUDA backend: NCCL collectives on device buffers, enqueued on a
// caller's stream (no host synchronisation). Bootstrapped over a host Communicator, so `scale` gets one
// per sub-communicator exactly as it gets the host one. C++20 (std::span, concepts): include it from
// .cpp files; .cu files compile as C++17.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <concepts>
#include <memory>
#include <span>
#include <string>

#include "comm/communicator.h"

namespace sb::cuda {

template <typename T> struct NcclTraits;
template <> struct NcclTraits<float> { static constexpr ncclDataType_t type = ncclFloat32; };
template <> struct NcclTraits<double> { static constexpr ncclDataType_t type = ncclFloat64; };
template <> struct NcclTraits<__half> { static constexpr ncclDataType_t type = ncclFloat16; };
template <> struct NcclTraits<__nv_bfloat16> { static constexpr ncclDataType_t type = ncclBfloat16; };

template <typename T>
concept NcclElement = requires { NcclTraits<T>::type; };

class NcclCommunicator {
 public:
  // Collective over host_comm: every member calls it after selecting its GPU with cudaSetDevice.
  // host_comm's rank 0 creates the unique id and broadcasts it; the NCCL ranks equal host_comm's.
  // Sets NCCL_GRAPH_MIXING_SUPPORT=0 where the environment leaves it unset: a collective launched outside
  // a CUDA graph must then wait until every graph launched before it with collectives of this communicator
  // is done (synchronise its stream first).
  explicit NcclCommunicator(Communicator& host_comm);
  ~NcclCommunicator();  // ncclCommDestroy; the caller has synchronised the streams that use it
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  ncclComm_t handle() const;

  // In place on device memory, enqueued on `stream`; the span's size is the element count.
  template <NcclElement T> void allreduce_avg(std::span<T> device_data, cudaStream_t stream) {
    allreduce(device_data.data(), device_data.size(), NcclTraits<T>::type, ncclAvg, stream);
  }
  template <NcclElement T> void allreduce_sum(std::span<T> device_data, cudaStream_t stream) {
    allreduce(device_data.data(), device_data.size(), NcclTraits<T>::type, ncclSum, stream);
  }
  // Out of place: `send` stays as it was, `received` gets the sum (nccl-tests' out-of-place case).
  template <NcclElement T> void allreduce_sum(std::span<const T> send, std::span<T> received, cudaStream_t stream) {
    allreduce(send.data(), received.data(), send.size(), NcclTraits<T>::type, ncclSum, stream);
  }
  // Root's device data into every rank's (e.g. the initial weights).
  template <NcclElement T> void broadcast(std::span<T> device_data, int root, cudaStream_t stream) {
    broadcast(device_data.data(), device_data.size(), NcclTraits<T>::type, root, stream);
  }

 private:
  struct Shared;  // the handle, shared with the abort hook so the hook outlives this object safely
  void allreduce(void* data, size_t count, ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
    allreduce(data, data, count, type, op, stream);
  }
  void allreduce(const void* send, void* received, size_t count, ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream);
  void broadcast(void* data, size_t count, ncclDataType_t type, int root, cudaStream_t stream);
  std::shared_ptr<Shared> shared_;
  int rank_ = 0;
  int size_ = 1;
};

// The NCCL library's version, e.g. "2.28.3" (not the headers').
std::string nccl_version_string();

}  // namespace sb::cuda
