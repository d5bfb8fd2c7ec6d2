#include "comm/cuda/allreduce_sweep_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/cuda/nccl_communicator.h"
#include "comm/cuda/nccl_window.h"
#include "core/cuda_check.h"
#include "core/error.h"

namespace sb::cuda {
namespace {

int select_device(int local_rank) {
  int count = 0;
  // The CLI has checked this on every rank together; failing here on one rank alone must stop the job
  // (a UserError would leave the other ranks waiting in ncclCommInitRank).
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    fatal("--device cuda: no CUDA device is visible to this rank (check CUDA_VISIBLE_DEVICES), or use --device cpu");
  const int device = local_rank % count;
  CHECK_CUDA(cudaSetDevice(device));
  return device;
}

// Host-side conversions; the check values are small integers, exact in every dtype.
template <typename T> T from_double(double x) { return static_cast<T>(x); }
template <> __half from_double<__half>(double x) { return __float2half(static_cast<float>(x)); }
template <> __nv_bfloat16 from_double<__nv_bfloat16>(double x) { return __float2bfloat16(static_cast<float>(x)); }
double to_double(float x) { return x; }
double to_double(double x) { return x; }
double to_double(__half x) { return __half2float(x); }
double to_double(__nv_bfloat16 x) { return __bfloat162float(x); }

}  // namespace

struct CudaAllreduceSweep::State {
  Communicator& host;
  int device;        // selected before the NCCL communicator is created (member order matters)
  NcclCommunicator nccl;
  std::string window_refusal;  // "" when the buffers are symmetric windows
  bool windows;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* buffers[2] = {nullptr, nullptr};  // send (and the in-place buffer), receive
  size_t capacity = 0;                      // bytes of each
  // With windows, the sizes up to kLargestSymmetricAllreduceBytes use these two instead, as training does.
  std::unique_ptr<NcclWindow> window_buffers[2];
  size_t window_capacity = 0;

  State(Communicator& host_comm, int local_rank, bool symmetric_memory)
      : host(host_comm), device(select_device(local_rank)), nccl(host_comm),
        window_refusal(symmetric_memory ? symmetric_window_refusal(host_comm) : ""),
        windows(symmetric_memory && window_refusal.empty()) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
  }
  ~State() {
    CHECK_CUDA(cudaStreamSynchronize(stream));  // before the NCCL communicator (a later member) goes
    release();
    for (auto& w : window_buffers) w.reset();
    CHECK_CUDA(cudaEventDestroy(stop));
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaStreamDestroy(stream));
  }

  void release() {
    for (void*& b : buffers) {
      if (b != nullptr) CHECK_CUDA(cudaFree(b));
      b = nullptr;
    }
  }

  // The two buffers for an all-reduce of `bytes`: windows where training would use one, else plain device
  // memory. Grow-only, so that two of each serve every size of the sweep; growing a window is collective,
  // which every rank reaches at the same size.
  std::array<void*, 2> ensure(size_t bytes) {
    if (windows && bytes <= kLargestSymmetricAllreduceBytes) {
      if (bytes > window_capacity) {
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (auto& w : window_buffers) w.reset();
        for (auto& w : window_buffers) w = std::make_unique<NcclWindow>(nccl, bytes);
        window_capacity = bytes;
      }
      return {window_buffers[0]->data(), window_buffers[1]->data()};
    }
    if (bytes > capacity) {
      CHECK_CUDA(cudaStreamSynchronize(stream));
      release();
      for (void*& b : buffers) CHECK_CUDA(cudaMalloc(&b, bytes));
      capacity = bytes;
    }
    return {buffers[0], buffers[1]};
  }

  // One form: in place on the send buffer, or out of place into the receive buffer.
  template <typename T> SweepTiming run_form(const SweepPoint& point, const SweepSettings& settings, bool in_place) {
    const CheckPattern pattern(point.dtype, nccl.size());
    const size_t count = static_cast<size_t>(point.count);
    const std::array<void*, 2> pair = ensure(count * sizeof(T));
    const std::span<T> send(static_cast<T*>(pair[0]), count);
    const std::span<T> result = in_place ? send : std::span<T>(static_cast<T*>(pair[1]), count);
    const auto allreduce = [&] {
      if (in_place) nccl.allreduce_sum(send, stream);
      else nccl.allreduce_sum(std::span<const T>(send), result, stream);
    };

    std::vector<T> staging(count);
    for (size_t i = 0; i < count; ++i) staging[i] = from_double<T>(pattern.value(nccl.rank(), static_cast<int64_t>(i)));
    CHECK_CUDA(cudaMemcpyAsync(send.data(), staging.data(), count * sizeof(T), cudaMemcpyHostToDevice, stream));
    allreduce();
    CHECK_CUDA(cudaMemcpyAsync(staging.data(), result.data(), count * sizeof(T), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    int64_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += to_double(staging[i]) != pattern.expected_sum(static_cast<int64_t>(i));

    for (int i = 0; i < settings.warmup_iterations; ++i) allreduce();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    host.barrier();  // every rank enqueues the timed loop together
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < settings.iterations; ++i) allreduce();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return summarize_timing(host, point, 1e-3 * ms / settings.iterations, wrong);
  }

  // Out of place, then in place, as all_reduce_perf prints them.
  template <typename T> SweepResult run(const SweepPoint& point, const SweepSettings& settings) {
    SweepResult r;
    r.point = point;
    r.out_of_place = run_form<T>(point, settings, false);
    r.in_place = run_form<T>(point, settings, true);
    return r;
  }
};

CudaAllreduceSweep::CudaAllreduceSweep(Communicator& host_comm, int local_rank, bool symmetric_memory)
    : state_(std::make_unique<State>(host_comm, local_rank, symmetric_memory)) {}

CudaAllreduceSweep::~CudaAllreduceSweep() = default;

int CudaAllreduceSweep::device() const { return state_->device; }

const std::string& CudaAllreduceSweep::symmetric_refusal() const { return state_->window_refusal; }

bool CudaAllreduceSweep::uses_symmetric_windows() const { return state_->windows; }

void CudaAllreduceSweep::check_fits(int64_t bytes) const {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  // A send and a receive buffer; NCCL keeps some memory of its own per collective: leave it 1/16 of the device.
  if (2.0 * static_cast<double>(bytes) > static_cast<double>(free_bytes) - total_bytes / 16.0) {
    throw UserError("--max-bytes: the largest all-reduce needs twice " + std::to_string(bytes) + " bytes of GPU " +
                    std::to_string(state_->device) + ", which has " + std::to_string(free_bytes) +
                    " bytes free; use a smaller --max-bytes or --comm-model");
  }
}

SweepResult CudaAllreduceSweep::run(const SweepPoint& point, const SweepSettings& settings) {
  switch (point.dtype) {
    case SweepDtype::Fp32: return state_->run<float>(point, settings);
    case SweepDtype::Fp64: return state_->run<double>(point, settings);
    case SweepDtype::Bf16: return state_->run<__nv_bfloat16>(point, settings);
    case SweepDtype::Fp16: return state_->run<__half>(point, settings);
  }
  fatal("CudaAllreduceSweep::run: unknown dtype");
}

}  // namespace sb::cuda
