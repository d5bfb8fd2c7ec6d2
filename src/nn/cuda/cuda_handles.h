// Move-only owners of the CUDA runtime's objects: streams, events, graphs and their executable
// instances, and pinned host memory. Creation and every use check the runtime's return code (a failure
// stops the job through CHECK_CUDA); a destructor never throws: it logs a failed release and goes on.
// Here, in the lowest library with host CUDA code, so that the layers and the engine share them.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace sb::cuda {

namespace detail {
// Logs a failed release on every rank: a destructor must not throw, and a leaked handle is not worth
// ending the job for (it usually follows a device fault that was already reported).
void log_release_failure(const char* call, cudaError_t status) noexcept;
}  // namespace detail

// Owns one handle of type H, freed by the CUDA call Release (named `kName` in the log); empty when it
// holds H{}.
template <typename H, cudaError_t (*Release)(H), const char* kName>
class CudaHandle {
 public:
  CudaHandle() = default;
  explicit CudaHandle(H handle) : handle_(handle) {}
  ~CudaHandle() { reset(); }
  CudaHandle(CudaHandle&& o) noexcept : handle_(std::exchange(o.handle_, H{})) {}
  CudaHandle& operator=(CudaHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, H{});
    }
    return *this;
  }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;

  H get() const { return handle_; }
  explicit operator bool() const { return handle_ != H{}; }
  // Releases the handle now (logging a failure, never throwing); empty afterwards.
  void reset() noexcept {
    if (handle_ == H{}) return;
    const cudaError_t status = Release(handle_);
    if (status != cudaSuccess) detail::log_release_failure(kName, status);
    handle_ = H{};
  }

 private:
  H handle_{};
};

namespace detail {
inline constexpr char kStreamDestroy[] = "cudaStreamDestroy";
inline constexpr char kEventDestroy[] = "cudaEventDestroy";
inline constexpr char kGraphDestroy[] = "cudaGraphDestroy";
inline constexpr char kGraphExecDestroy[] = "cudaGraphExecDestroy";
inline constexpr char kFreeHost[] = "cudaFreeHost";
template <typename T>
cudaError_t free_pinned(T* p) {
  return cudaFreeHost(p);
}
}  // namespace detail

// A captured (not yet executable) graph.
using CudaGraph = CudaHandle<cudaGraph_t, &cudaGraphDestroy, detail::kGraphDestroy>;

// A stream; created non-blocking (it never synchronises with the legacy default stream).
class CudaStream {
 public:
  CudaStream() = default;  // empty
  // priority: lower numbers run first; 0 is the default, cudaDeviceGetStreamPriorityRange gives the range.
  static CudaStream create_non_blocking(int priority = 0);
  // The priorities of scalebench's streams, highest first. The block scheduler gives an SM that frees up to
  // the waiting block of highest priority, so a kernel of the training step no longer waits for the input
  // decoding's queued blocks, and NCCL's all-reduce blocks wait for neither.
  // The highest priority the device offers: the all-reduces (work that must not queue behind compute).
  static int greatest_priority();
  // The training step's streams: one above the least where the device has the levels (0 to -5 on Hopper).
  static int compute_priority();
  // The least priority (0, CUDA's default): the input decoding, which yields SMs to the training step.
  static int least_priority();

  cudaStream_t get() const { return stream_.get(); }
  explicit operator bool() const { return static_cast<bool>(stream_); }
  void synchronize() const;
  // cudaSuccess when everything queued has finished, cudaErrorNotReady while work is pending, else the
  // error (returned, not raised: a caller polling under a watchdog decides).
  cudaError_t query() const { return cudaStreamQuery(stream_.get()); }
  // Makes this stream wait for `event` (no host synchronisation).
  void wait(cudaEvent_t event) const;
  // For destructors: waits for the queued work, logging instead of throwing.
  void synchronize_noexcept() const noexcept;
  // Stream capture: the work queued between the two calls becomes a graph instead of running.
  void begin_capture(cudaStreamCaptureMode mode) const;
  // Ends the capture; the status is returned rather than raised (work that can't be captured is a case
  // for a fallback). `graph` receives whatever the runtime returned, possibly nothing.
  cudaError_t end_capture(CudaGraph& graph) const;

 private:
  CudaHandle<cudaStream_t, &cudaStreamDestroy, detail::kStreamDestroy> stream_;
};

// An event; timing events by default, cudaEventDisableTiming for pure ordering.
class CudaEvent {
 public:
  CudaEvent() = default;  // empty
  static CudaEvent create(unsigned int flags = cudaEventDefault);

  cudaEvent_t get() const { return event_.get(); }
  explicit operator bool() const { return static_cast<bool>(event_); }
  void record(cudaStream_t stream) const;
  // Inside a stream capture, records an event node of the graph (each replay records it again); outside
  // one, the same as record().
  void record_external(cudaStream_t stream) const;
  // A timing event of work that may be captured: record_external() while `capturing`, else record().
  void record_maybe_captured(cudaStream_t stream, bool capturing) const;
  void synchronize() const;
  // As CudaStream::query, for the work before the last record().
  cudaError_t query() const { return cudaEventQuery(event_.get()); }
  // Milliseconds from `start` to `end`, both recorded and finished.
  static float elapsed_ms(const CudaEvent& start, const CudaEvent& end);

 private:
  CudaHandle<cudaEvent_t, &cudaEventDestroy, detail::kEventDestroy> event_;
};

// An executable graph.
class CudaGraphExec {
 public:
  CudaGraphExec() = default;  // empty
  // Instantiates `graph`; the status is returned rather than raised, since a graph the device can't
  // instantiate is a case for a fallback, not a fault. `out` stays empty on failure.
  static cudaError_t instantiate(const CudaGraph& graph, unsigned long long flags, CudaGraphExec& out);

  explicit operator bool() const { return static_cast<bool>(exec_); }
  void launch(cudaStream_t stream) const;
  void reset() noexcept { exec_.reset(); }

 private:
  CudaHandle<cudaGraphExec_t, &cudaGraphExecDestroy, detail::kGraphExecDestroy> exec_;
};

// Page-locked host memory for `count` elements of T (asynchronous copies need it), uninitialised.
template <typename T>
class PinnedArray {
 public:
  PinnedArray() = default;
  explicit PinnedArray(size_t count);
  PinnedArray(PinnedArray&& o) noexcept : data_(std::move(o.data_)), count_(std::exchange(o.count_, 0)) {}
  PinnedArray& operator=(PinnedArray&& o) noexcept {
    data_ = std::move(o.data_);
    count_ = std::exchange(o.count_, 0);
    return *this;
  }
  T* data() const { return data_.get(); }
  size_t size() const { return count_; }
  T& operator[](size_t i) const { return data_.get()[i]; }

 private:
  CudaHandle<T*, &detail::free_pinned<T>, detail::kFreeHost> data_;
  size_t count_ = 0;
};

namespace detail {
void* allocate_pinned(size_t bytes);
}  // namespace detail

template <typename T>
PinnedArray<T>::PinnedArray(size_t count) : data_(static_cast<T*>(detail::allocate_pinned(count * sizeof(T)))), count_(count) {}

}  // namespace sb::cuda
