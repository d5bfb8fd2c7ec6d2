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

// Owns one handle described by Traits (Handle: its type; release(h): the CUDA call that frees it; name:
// that call's name, for the log). Empty when it holds Handle{}.
template <typename Traits>
class CudaHandle {
 public:
  using Handle = typename Traits::Handle;
  CudaHandle() = default;
  explicit CudaHandle(Handle handle) : handle_(handle) {}
  ~CudaHandle() { reset(); }
  CudaHandle(CudaHandle&& o) noexcept : handle_(std::exchange(o.handle_, Handle{})) {}
  CudaHandle& operator=(CudaHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, Handle{});
    }
    return *this;
  }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  // Releases the handle now (logging a failure, never throwing); empty afterwards.
  void reset() noexcept {
    if (handle_ == Handle{}) return;
    const cudaError_t status = Traits::release(handle_);
    if (status != cudaSuccess) detail::log_release_failure(Traits::name, status);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

struct StreamTraits {
  using Handle = cudaStream_t;
  static constexpr const char* name = "cudaStreamDestroy";
  static cudaError_t release(Handle h) { return cudaStreamDestroy(h); }
};
struct EventTraits {
  using Handle = cudaEvent_t;
  static constexpr const char* name = "cudaEventDestroy";
  static cudaError_t release(Handle h) { return cudaEventDestroy(h); }
};
struct GraphTraits {
  using Handle = cudaGraph_t;
  static constexpr const char* name = "cudaGraphDestroy";
  static cudaError_t release(Handle h) { return cudaGraphDestroy(h); }
};
struct GraphExecTraits {
  using Handle = cudaGraphExec_t;
  static constexpr const char* name = "cudaGraphExecDestroy";
  static cudaError_t release(Handle h) { return cudaGraphExecDestroy(h); }
};
template <typename T>
struct PinnedTraits {
  using Handle = T*;
  static constexpr const char* name = "cudaFreeHost";
  static cudaError_t release(Handle h) { return cudaFreeHost(h); }
};

// A captured (not yet executable) graph.
using CudaGraph = CudaHandle<GraphTraits>;

// A stream; created non-blocking (it never synchronises with the legacy default stream).
class CudaStream {
 public:
  CudaStream() = default;  // empty
  // priority: lower numbers run first; 0 is the default, cudaDeviceGetStreamPriorityRange gives the range.
  static CudaStream create_non_blocking(int priority = 0);
  // The highest priority the device offers (for work that must not queue behind compute).
  static int greatest_priority();

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
  CudaHandle<StreamTraits> stream_;
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
  void synchronize() const;
  // As CudaStream::query, for the work before the last record().
  cudaError_t query() const { return cudaEventQuery(event_.get()); }
  // Milliseconds from `start` to `end`, both recorded and finished.
  static float elapsed_ms(const CudaEvent& start, const CudaEvent& end);

 private:
  CudaHandle<EventTraits> event_;
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
  CudaHandle<GraphExecTraits> exec_;
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
  CudaHandle<PinnedTraits<T>> data_;
  size_t count_ = 0;
};

namespace detail {
void* allocate_pinned(size_t bytes);
}  // namespace detail

template <typename T>
PinnedArray<T>::PinnedArray(size_t count) : data_(static_cast<T*>(detail::allocate_pinned(count * sizeof(T)))), count_(count) {}

}  // namespace sb::cuda
