#include "data/cuda/host_input.h"

#include <algorithm>
#include <utility>

#include "core/cuda_check.h"
#include "data/cuda/gpu_decode_source.h"
#include "data/image_data_sets.h"
#include "data/sampler.h"

namespace sb::cuda {

HostInput::HostInput(const Dataset& train, const Dataset& test, const InputPipelineOptions& options, WaitForEvent wait)
    : train_(train),
      options_(options),
      wait_(std::move(wait)),
      schedule_(train.size(), options.world_size, options.rank, options.seed, options.drop_last, options.train_batch,
                shard_sizes(train)) {
  const bool gpu_decode = train.streamed() && options.decode == ImageDecoding::Gpu;
  // A host row is a built sample, or with --decode gpu the record of a still-encoded file.
  const int64_t device_sample_bytes = std::max(train.sample_bytes(), test.sample_bytes()) * static_cast<int64_t>(dtype_size(options.format.dtype));
  const int64_t host_sample_bytes = gpu_decode ? 1 : device_sample_bytes;
  const size_t host_image_bytes = static_cast<size_t>(options.max_batch * host_sample_bytes);
  const size_t device_image_bytes = static_cast<size_t>(options.max_batch * device_sample_bytes);
  const size_t label_bytes = static_cast<size_t>(options.max_batch) * sizeof(int32_t);
  constexpr size_t kAlign = 64;  // every slot starts aligned for the records' pointers
  const size_t slot_bytes = (host_image_bytes + label_bytes + kAlign - 1) / kAlign * kAlign;  // labels after the images
  // With --decode gpu a ring slot stays taken until its step has run: the input slots' buffers become ring
  // slots of their own.
  ring_slots_ = gpu_decode ? kHostRingSlots + kInputSlots : kHostRingSlots;
  const size_t ring_bytes = slot_bytes * static_cast<size_t>(ring_slots_);
  std::byte* ring = nullptr;
  if (options.pin_memory) {
    pinned_ = PinnedArray<std::byte>(ring_bytes);
    ring = pinned_.data();
  } else {
    pageable_.resize(ring_bytes);
    ring = pageable_.data();
  }
  if (gpu_decode) {
    gpu_decoders_ = std::make_unique<GpuDecoders>(options.max_batch, options.bad_images, options.rank, counters_);
    train_builder_ = std::make_unique<GpuDecodeSource>(train, true, options.format, *gpu_decoders_);
    test_builder_ = std::make_unique<GpuDecodeSource>(test, false, options.format, *gpu_decoders_);
  } else {
    train_builder_ = make_batch_source(train, true, options.augmentation, options.format, options.bad_images, options.rank, counters_);
    test_builder_ = make_batch_source(test, false, options.augmentation, options.format, options.bad_images, options.rank, counters_);
  }
  std::vector<HostBatchBuffer> buffers;
  for (int r = 0; r < ring_slots_; ++r) {
    std::byte* slot = ring + static_cast<size_t>(r) * slot_bytes;
    buffers.push_back(HostBatchBuffer{slot, reinterpret_cast<int32_t*>(slot + host_image_bytes)});
    if (gpu_decode) {
      gpu_decoders_->add_slot(slot, decoded_batches_.emplace_back().ensure(device_image_bytes));
      read_.push_back(CudaEvent::create(cudaEventDisableTiming));
    }
    uploaded_.push_back(CudaEvent::create(cudaEventDisableTiming));
    if (train.streamed()) {
      upload_started_.push_back(CudaEvent::create());
      upload_finished_.push_back(CudaEvent::create());
    }
  }
  in_use_.reserve(static_cast<size_t>(ring_slots_));
  for (int s = 0; s < kInputSlots; ++s) {
    consumed_[static_cast<size_t>(s)] = CudaEvent::create(cudaEventDisableTiming);
    if (!gpu_decode) inputs_[static_cast<size_t>(s)].ensure(device_image_bytes);
    labels_[static_cast<size_t>(s)].ensure(label_bytes);
  }
  copy_stream_ = CudaStream::create_non_blocking();
  pipeline_ = std::make_unique<HostBatchPipeline>(options.workers, std::move(buffers), options.max_batch, host_sample_bytes);
}

HostInput::~HostInput() {
  // Uploads in flight still read the ring and write the device buffers released below. (The steps that
  // read the ring's device batches are the engine's to wait for, before it releases its pipeline.)
  copy_stream_.synchronize_noexcept();
  pipeline_.reset();
}

void HostInput::stage_training(int slot, std::span<const int64_t> indices, int epoch, uint64_t position,
                               cudaStream_t compute) {
  const BatchRequest wanted{train_builder_.get(), indices, AugmentKey{options_.seed, epoch, options_.rank}, position};
  const std::optional<ScheduledBatch> scheduled = schedule_.at(epoch, position);
  if (!pipeline_->front_is(wanted)) {
    ++training_built_on_demand_;
    queue_unless_next(wanted);
    last_predicted_ = scheduled;
  }
  upload(slot, pipeline_->take(), compute);
  next_training_.reset();
  if (scheduled) next_training_ = schedule_.after(*scheduled);
  if (last_predicted_) queue_predicted_training();
}

void HostInput::queue_predicted_training() {
  while (slot_free_now()) {
    const std::optional<ScheduledBatch> next = last_predicted_ ? schedule_.after(*last_predicted_) : next_training_;
    if (!next) return;
    if (last_predicted_ && next->epoch != last_predicted_->epoch && !expected_evaluation_.empty()) {
      // Between two epochs: the evaluation that followed the last one comes first.
      if (evaluation_after_epoch_ != last_predicted_->epoch) {
        evaluation_after_epoch_ = last_predicted_->epoch;
        evaluation_parts_queued_ = 0;
      }
      const int64_t parts =
          num_batches(static_cast<int64_t>(expected_evaluation_.size()), expected_evaluation_batch_, false);
      if (evaluation_parts_queued_ < parts) {
        pipeline_->submit(evaluation_request(expected_evaluation_, expected_evaluation_batch_, evaluation_parts_queued_++));
        continue;
      }
    }
    last_predicted_ = next;
    pipeline_->submit(BatchRequest{train_builder_.get(), schedule_.indices(*last_predicted_),
                                   AugmentKey{options_.seed, last_predicted_->epoch, options_.rank},
                                   last_predicted_->first_position});
  }
}

BatchRequest HostInput::evaluation_request(std::span<const int64_t> indices, int64_t batch, int64_t part) const {
  const size_t begin = static_cast<size_t>(part * batch);
  const size_t count = std::min(static_cast<size_t>(batch), indices.size() - begin);
  return BatchRequest{test_builder_.get(), indices.subspan(begin, count), AugmentKey{}, 0};
}

DeviceTensor HostInput::evaluation_batch(int slot, std::span<const int64_t> indices, int64_t evaluation_batch,
                                         int64_t part, cudaStream_t compute) {
  const int64_t parts = num_batches(static_cast<int64_t>(indices.size()), evaluation_batch, false);
  const BatchRequest wanted = evaluation_request(indices, evaluation_batch, part);
  if (!pipeline_->front_is(wanted)) {
    ++evaluation_built_on_demand_;
    queue_unless_next(wanted);
    last_predicted_.reset();
    evaluation_parts_queued_ = part + 1;
  }
  if (part == 0 && (evaluation_batch != expected_evaluation_batch_ ||
                    !std::equal(indices.begin(), indices.end(), expected_evaluation_.begin(), expected_evaluation_.end()))) {
    expected_evaluation_.assign(indices.begin(), indices.end());  // queued requests hold copies of the old
    expected_evaluation_batch_ = evaluation_batch;
  }
  upload(slot, pipeline_->take(), compute);
  while (evaluation_parts_queued_ < parts && slot_free_now())
    pipeline_->submit(evaluation_request(indices, evaluation_batch, evaluation_parts_queued_++));
  // Every part is queued: the slots left build the training batches that follow, so that the next epoch
  // does not start by waiting for its first batch (an evaluation after every epoch would cost each epoch
  // that wait).
  if (evaluation_parts_queued_ >= parts) queue_predicted_training();
  return input(slot, static_cast<int64_t>(wanted.indices.size()));
}

void HostInput::queue_unless_next(const BatchRequest& wanted) {
  pipeline_->discard_queued();
  if (!slot_free_now()) reclaim(true);
  pipeline_->submit(wanted);
}

void HostInput::upload(int slot, const HostBatch& batch, cudaStream_t compute) {
  const size_t s = static_cast<size_t>(slot);
  copy_stream_.wait(consumed_[s].get());  // the step that last read this slot's buffers
  const size_t ring_slot = static_cast<size_t>(batch.slot);
  if (!upload_started_.empty()) upload_started_[ring_slot].record(copy_stream_.get());
  if (gpu_decoders_) {  // the workers left the batch decoded in the ring slot's device batch: read in place
    release_after(slot, compute);  // a batch staged before and never consumed
    staged_ring_[s] = batch.slot;
    holds_ring_[s] = true;
  } else {
    const size_t image_bytes = static_cast<size_t>(batch.rows * train_builder_->sample_bytes());
    CHECK_CUDA(cudaMemcpyAsync(inputs_[s].data(), batch.buffer.images, image_bytes, cudaMemcpyHostToDevice, copy_stream_.get()));
  }
  CHECK_CUDA(cudaMemcpyAsync(labels_[s].data(), batch.buffer.labels, static_cast<size_t>(batch.rows) * sizeof(int32_t),
                             cudaMemcpyHostToDevice, copy_stream_.get()));
  if (!upload_finished_.empty()) upload_finished_[ring_slot].record(copy_stream_.get());
  const CudaEvent& done = uploaded_[static_cast<size_t>(batch.slot)];
  done.record(copy_stream_.get());
  CHECK_CUDA(cudaStreamWaitEvent(compute, done.get(), 0));
  if (!gpu_decoders_) in_use_.push_back(batch.slot);
  counters_.add_skipped(batch.skipped);  // taken for a step: its skipped files count now
}

void HostInput::consumed(int slot, cudaStream_t compute) {
  consumed_[static_cast<size_t>(slot)].record(compute);
  release_after(slot, compute);
}

void HostInput::release_after(int slot, cudaStream_t compute) {
  const size_t s = static_cast<size_t>(slot);
  if (!holds_ring_[s]) return;
  read_[static_cast<size_t>(staged_ring_[s])].record(compute);
  in_use_.push_back(staged_ring_[s]);
  holds_ring_[s] = false;
}

int HostInput::staged_buffer(int slot) const { return gpu_decoders_ ? staged_ring_[static_cast<size_t>(slot)] : 0; }

void HostInput::reclaim(bool all) {
  size_t done = 0;
  for (; done < in_use_.size(); ++done) {
    const size_t r = static_cast<size_t>(in_use_[done]);
    const CudaEvent& free_after = gpu_decoders_ ? read_[r] : uploaded_[r];
    if (all) {
      wait_(free_after);  // behind it may be a step's all-reduce: wait under the watchdog
    } else {
      const cudaError_t status = free_after.query();
      if (status == cudaErrorNotReady) break;
      CHECK_CUDA(status);
    }
    if (!upload_finished_.empty())  // image files: the upload's time on the copy stream
      counters_.add_copy(static_cast<int64_t>(1e6 * CudaEvent::elapsed_ms(upload_started_[r], upload_finished_[r])));
    pipeline_->release(in_use_[done]);
  }
  in_use_.erase(in_use_.begin(), in_use_.begin() + static_cast<std::ptrdiff_t>(done));
}

bool HostInput::slot_free_now() {
  if (pipeline_->free_slots() > 0) return true;
  reclaim(false);
  return pipeline_->free_slots() > 0;
}

DeviceTensor HostInput::input_in(int slot, int buffer, int64_t rows) const {
  DeviceTensor x;
  x.data = gpu_decoders_ ? decoded_batches_[static_cast<size_t>(buffer)].data() : inputs_[static_cast<size_t>(slot)].data();
  x.desc = TensorDesc{Shape{rows, train_.channels, train_.height, train_.width}, options_.format.dtype, options_.format.layout};
  return x;
}

std::optional<InputTotals> HostInput::input_totals() const {
  if (!train_.streamed()) return std::nullopt;
  return counters_.totals();
}

const int32_t* HostInput::labels(int slot) const {
  return static_cast<const int32_t*>(labels_[static_cast<size_t>(slot)].data());
}

}  // namespace sb::cuda
