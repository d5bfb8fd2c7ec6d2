#include "train/engines/cuda/gradient_buckets.h"

#include <cuda_bf16.h>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/nvtx_ranges.h"
#include "kernels/elementwise.h"
#include "train/engines/optimizer_overlap.h"

namespace sb::cuda {

GradientBuckets::GradientBuckets(std::vector<Bucket> buckets, float* grads, int64_t n, NcclCommunicator& nccl,
                                 cudaStream_t compute, bool reduce_in_bf16, bool symmetric_window)
    : buckets_(std::move(buckets)), grads_(grads), n_(n), nccl_(nccl), compute_(compute), bf16_(reduce_in_bf16) {
  // The highest priority: NCCL's blocks are scheduled as soon as a bucket is ready instead of queueing
  // behind backward's, so each all-reduce holds SMs for a shorter window (docs/performance.md, 2 H200s:
  // exposed communication 0.080 -> 0.039 ms per step, backward 8.38 -> 8.35 ms).
  comm_ = CudaStream::create_non_blocking(CudaStream::greatest_priority());
  ready_.reserve(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) ready_.push_back(CudaEvent::create(cudaEventDisableTiming));
  done_ = CudaEvent::create(cudaEventDisableTiming);
  stamps_ = DeviceTimestamps(static_cast<size_t>(kStepSlots) * buckets_.size() * kStamps);
  std::vector<int64_t> counts;
  for (const Bucket& bucket : buckets_) counts.push_back(bucket.end - bucket.begin);
  SymmetricWindowLayout layout;
  if (symmetric_window) {
    layout = symmetric_window_layout(counts, bf16_ ? sizeof(__nv_bfloat16) : sizeof(float));
  } else {
    layout.offsets.assign(buckets_.size(), SymmetricWindowLayout::kNotInWindow);
  }
  if (layout.bytes > 0) window_ = std::make_unique<NcclWindow>(nccl_, layout.bytes);
  if (bf16_) {
    const PackedOutsideWindow packed = pack_outside_window(counts, layout);
    bf16_offsets_ = packed.offsets;
    if (packed.elements > 0) bf16_buffer_.ensure(packed.elements * sizeof(__nv_bfloat16));
  }
  window_offsets_ = std::move(layout.offsets);
}

GradientBuckets::~GradientBuckets() {
  // The window is deregistered and freed below: no all-reduce may still be reading it.
  comm_.synchronize_noexcept();
}

void GradientBuckets::queue_updates(const DeviceOptimizer& optimizer) {
  if (optimizer.param_count() != n_ || !buckets_tile_descending(buckets_, n_))
    fatal("GradientBuckets: the buckets must cover the optimizer's parameters in descending order to queue its updates");
  optimizer_ = &optimizer;
}

void GradientBuckets::begin_step(int slot) {
  next_ = 0;
  slot_ = slot;
}

void GradientBuckets::launch(size_t b, cudaStream_t ready_on) {
  const NvtxRange range(nvtx_bucket_name(static_cast<int>(b)));
  const Bucket& bucket = buckets_[b];
  const int64_t count = bucket.end - bucket.begin;
  ready_[b].record(ready_on);
  stamps_.record(stamp_index(slot_, b, kReady), ready_on);
  comm_.wait(ready_[b].get());
  float* data = grads_ + bucket.begin;
  const float* updates_from = nullptr;  // where the update reads the average; nullptr: at `data`
  if (window_offsets_[b] != SymmetricWindowLayout::kNotInWindow) {
    // NCCL's symmetric kernels sum only: the 1/ranks of the average is applied on the way in, as NCCL's
    // own average of floats does (a pre-multiplied sum).
    const DType wire = bf16_ ? DType::BF16 : DType::F32;
    void* slot = static_cast<char*>(window_->data()) + window_offsets_[b];
    kernels::scale_cast(data, DType::F32, slot, wire, 1.0f / static_cast<float>(nccl_.size()), count, comm_.get());
    if (bf16_)
      nccl_.allreduce_sum(std::span<__nv_bfloat16>(static_cast<__nv_bfloat16*>(slot), static_cast<size_t>(count)), comm_.get());
    else
      nccl_.allreduce_sum(std::span<float>(static_cast<float*>(slot), static_cast<size_t>(count)), comm_.get());
    // An fp32 average whose update is queued here is read by the update from its slot: no copy back.
    if (bf16_ || !optimizer_) kernels::cast(slot, wire, data, DType::F32, count, comm_.get());
    else updates_from = static_cast<const float*>(slot);
  } else if (!bf16_) {
    nccl_.allreduce_avg(std::span<float>(data, static_cast<size_t>(count)), comm_.get());
  } else {
    auto* half = static_cast<__nv_bfloat16*>(bf16_buffer_.data()) + bf16_offsets_[b];
    kernels::cast(data, DType::F32, half, DType::BF16, count, comm_.get());
    nccl_.allreduce_avg(std::span<__nv_bfloat16>(half, static_cast<size_t>(count)), comm_.get());
    kernels::cast(half, DType::BF16, data, DType::F32, count, comm_.get());
  }
  stamps_.record(stamp_index(slot_, b, kReduced), comm_.get());
  if (optimizer_) {
    optimizer_->enqueue_range(bucket.begin, count, advances_step_counter(b, buckets_.size()), comm_.get(), updates_from);
    if (takes_update_stamp(b)) stamps_.record(stamp_index(slot_, b, kUpdated), comm_.get());
  }
}

void GradientBuckets::gradients_ready_from(int64_t first_final, cudaStream_t final_on) {
  while (next_ < buckets_.size() && buckets_[next_].begin >= first_final) launch(next_++, final_on);
}

void GradientBuckets::finish() {
  while (next_ < buckets_.size()) launch(next_++, compute_);
  done_.record(comm_.get());
  CHECK_CUDA(cudaStreamWaitEvent(compute_, done_.get(), 0));
}

double GradientBuckets::since(size_t stamp, uint64_t step_start_ns) const {
  constexpr double kSecondsPerNanosecond = 1e-9;
  return static_cast<double>(static_cast<int64_t>(stamps_.ns(stamp) - step_start_ns)) * kSecondsPerNanosecond;
}

std::vector<BucketSpan> GradientBuckets::read_times(int slot, uint64_t step_start_ns) const {
  const size_t element_bytes = bf16_ ? sizeof(__nv_bfloat16) : sizeof(float);
  std::vector<BucketSpan> spans(buckets_.size());
  // A bucket starts once the communication stream is done with the one before: its all-reduce, or its
  // update where one follows it. Its span then ends with its own all-reduce.
  for (size_t b = 0; b < buckets_.size(); ++b) {
    BucketSpan& span = spans[b];
    span.ready_s = since(stamp_index(slot, b, kReady), step_start_ns);
    span.end_s = since(stamp_index(slot, b, takes_update_stamp(b) ? kUpdated : kReduced), step_start_ns);
    span.bytes = (buckets_[b].end - buckets_[b].begin) * static_cast<int64_t>(element_bytes);
  }
  set_bucket_starts(spans);
  if (optimizer_)
    for (size_t b = 0; b < buckets_.size(); ++b) spans[b].end_s = since(stamp_index(slot, b, kReduced), step_start_ns);
  return spans;
}

}  // namespace sb::cuda
