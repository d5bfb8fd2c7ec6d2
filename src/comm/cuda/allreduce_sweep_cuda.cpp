#include "comm/cuda/allreduce_sweep_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/cuda/nccl_collective_calls.h"
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

  // The check's data of one form, uploaded: out of place the input into the send buffer and kUnwritten
  // into the receive buffer; in place one buffer of `count` elements, kUnwritten but for the input at the
  // collective's offset. A rank that sends nothing (not a broadcast's root) uploads no input.
  template <typename T> void upload(const Collective& c, const SweepPoint& point, bool in_place, T* send, T* receive) {
    const int rank = nccl.rank(), ranks = nccl.size();
    const CheckPattern pattern(point.dtype, ranks);
    const int64_t per_rank = c.per_rank_count(point.count, ranks);
    const int64_t inputs = sends_input(c, rank) ? c.send_count(point.count, ranks) : 0;
    const size_t whole = static_cast<size_t>(point.count);
    std::vector<T> staging(whole, from_double<T>(CheckPattern::kUnwritten));
    const int64_t at = in_place ? c.in_place_input_offset(rank, per_rank) : 0;
    for (int64_t j = 0; j < inputs; ++j) staging[static_cast<size_t>(at + j)] = from_double<T>(pattern.value(rank, j));
    if (in_place) {
      CHECK_CUDA(cudaMemcpyAsync(send - at, staging.data(), whole * sizeof(T), cudaMemcpyHostToDevice, stream));
    } else {
      const size_t sent = static_cast<size_t>(c.send_count(point.count, ranks));
      const std::vector<T> unwritten(static_cast<size_t>(c.receive_count(point.count, ranks)), from_double<T>(CheckPattern::kUnwritten));
      CHECK_CUDA(cudaMemcpyAsync(send, staging.data(), sent * sizeof(T), cudaMemcpyHostToDevice, stream));
      CHECK_CUDA(cudaMemcpyAsync(receive, unwritten.data(), unwritten.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(stream));  // before the host vectors go
  }

  // One form: in place in the first buffer, or out of place from the first into the second. The
  // collective is checked once, then timed.
  template <typename T> SweepTiming run_form(const SweepPoint& point, const SweepSettings& settings, bool in_place) {
    const Collective& c = collective_of(point.collective);
    const int rank = nccl.rank();
    const int64_t per_rank = c.per_rank_count(point.count, nccl.size());
    const std::array<void*, 2> pair = ensure(static_cast<size_t>(point.count) * sizeof(T));
    T* const first = static_cast<T*>(pair[0]);
    T* const send = in_place ? first + c.in_place_input_offset(rank, per_rank) : first;
    T* const receive = in_place ? first + c.in_place_result_offset(rank, per_rank, /*mpi=*/false) : static_cast<T*>(pair[1]);
    const auto call = [&] {
      run_nccl_collective(point.collective, send, receive, per_rank, NcclTraits<T>::type, nccl.handle(), stream);
    };

    upload<T>(c, point, in_place, send, receive);
    call();
    std::vector<T> result(static_cast<size_t>(c.receive_count(point.count, nccl.size())));
    CHECK_CUDA(cudaMemcpyAsync(result.data(), receive, result.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const int64_t wrong = count_wrong(c, CheckPattern(point.dtype, nccl.size()), rank, per_rank,
                                      std::span<const T>(result), [](T x) { return to_double(x); });

    for (int i = 0; i < settings.warmup_iterations; ++i) call();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    host.barrier();  // every rank enqueues the timed loop together
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < settings.iterations; ++i) call();
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
    throw UserError("--max-bytes: the largest collective needs twice " + std::to_string(bytes) + " bytes of GPU " +
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
