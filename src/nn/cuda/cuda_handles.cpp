#include "nn/cuda/cuda_handles.h"

#include <algorithm>

#include "core/cuda_check.h"
#include "core/log.h"

namespace sb::cuda {

namespace detail {
void log_release_failure(const char* call, cudaError_t status) noexcept {
  log_all("warning: %s failed while releasing a CUDA object (%s: %s); it is leaked\n", call, cudaGetErrorName(status),
          cudaGetErrorString(status));
}

void* allocate_pinned(size_t bytes) {
  void* p = nullptr;
  CHECK_CUDA(cudaMallocHost(&p, bytes));
  return p;
}
}  // namespace detail

CudaStream CudaStream::create_non_blocking(int priority) {
  cudaStream_t s = nullptr;
  CHECK_CUDA(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
  CudaStream out;
  out.stream_ = decltype(out.stream_)(s);
  return out;
}

namespace {
struct PriorityRange {
  int least = 0, greatest = 0;  // lower numbers run first: greatest <= least
};
PriorityRange priority_range() {
  PriorityRange r;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&r.least, &r.greatest));
  return r;
}
}  // namespace

int CudaStream::greatest_priority() { return priority_range().greatest; }

int CudaStream::compute_priority() {
  const PriorityRange r = priority_range();
  return std::max(r.greatest, r.least - 1);
}

int CudaStream::least_priority() { return priority_range().least; }

void CudaStream::synchronize() const { CHECK_CUDA(cudaStreamSynchronize(stream_.get())); }

void CudaStream::wait(cudaEvent_t event) const { CHECK_CUDA(cudaStreamWaitEvent(stream_.get(), event, 0)); }

void CudaStream::synchronize_noexcept() const noexcept {
  if (!stream_) return;
  const cudaError_t status = cudaStreamSynchronize(stream_.get());
  if (status != cudaSuccess) detail::log_release_failure("cudaStreamSynchronize", status);
}

void CudaStream::begin_capture(cudaStreamCaptureMode mode) const { CHECK_CUDA(cudaStreamBeginCapture(stream_.get(), mode)); }

cudaError_t CudaStream::end_capture(CudaGraph& graph) const {
  cudaGraph_t g = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream_.get(), &g);
  graph = CudaGraph(g);
  return status;
}

CudaEvent CudaEvent::create(unsigned int flags) {
  cudaEvent_t e = nullptr;
  CHECK_CUDA(cudaEventCreateWithFlags(&e, flags));
  CudaEvent out;
  out.event_ = decltype(out.event_)(e);
  return out;
}

void CudaEvent::record(cudaStream_t stream) const { CHECK_CUDA(cudaEventRecord(event_.get(), stream)); }

void CudaEvent::record_external(cudaStream_t stream) const {
  CHECK_CUDA(cudaEventRecordWithFlags(event_.get(), stream, cudaEventRecordExternal));
}

void CudaEvent::record_maybe_captured(cudaStream_t stream, bool capturing) const {
  if (capturing) {
    record_external(stream);
  } else {
    record(stream);
  }
}

void CudaEvent::synchronize() const { CHECK_CUDA(cudaEventSynchronize(event_.get())); }

float CudaEvent::elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

cudaError_t CudaGraphExec::instantiate(const CudaGraph& graph, unsigned long long flags, CudaGraphExec& out) {
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiateWithFlags(&exec, graph.get(), flags);
  out.exec_ = decltype(out.exec_)(status == cudaSuccess ? exec : nullptr);
  return status;
}

void CudaGraphExec::launch(cudaStream_t stream) const { CHECK_CUDA(cudaGraphLaunch(exec_.get(), stream)); }

}  // namespace sb::cuda
