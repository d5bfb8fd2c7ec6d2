// A pool of worker threads that build batches (BatchSource: a data set in memory or image files) into a ring of host buffers ahead of
// their use, as a PyTorch DataLoader's workers do. Batches come out in the order they were submitted;
// the workers of a pool share each batch's rows, so one batch is ready as soon as possible. The buffers
// belong to the caller (pinned memory for the GPU); a slot taken out stays the caller's until released,
// so that a copy from it may still run. Nothing is allocated per batch.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "data/batch_source.h"
#include "maths/augment.h"

namespace sb {

// One slot's memory: max_batch samples of the builders' sample_bytes() and max_batch labels.
struct HostBatchBuffer {
  std::byte* images = nullptr;
  int32_t* labels = nullptr;
};

// What to build: `indices` of builder's data set, augmented with the draws of first_position + j under key.
struct BatchRequest {
  const BatchSource* builder = nullptr;
  std::span<const int64_t> indices;
  AugmentKey key;
  uint64_t first_position = 0;
};

// A built batch, taken out of the pipeline.
struct HostBatch {
  int slot = 0;
  int64_t rows = 0;
  HostBatchBuffer buffer;
  std::vector<std::string> skipped;  // the files --bad-images skip left out of it, for the taker to count
};

class HostBatchPipeline {
 public:
  // workers >= 1 threads; one slot per buffer, each holding up to max_batch samples of at most
  // sample_bytes each (the largest builder's). Throws std::invalid_argument for no workers or buffers.
  HostBatchPipeline(int workers, std::vector<HostBatchBuffer> buffers, int64_t max_batch, int64_t sample_bytes);
  ~HostBatchPipeline();  // stops the workers after the rows they are building
  HostBatchPipeline(const HostBatchPipeline&) = delete;
  HostBatchPipeline& operator=(const HostBatchPipeline&) = delete;

  int workers() const { return static_cast<int>(threads_.size()); }
  int free_slots() const;
  int queued() const;  // submitted, not yet taken
  // The oldest queued batch's request (its indices are the pipeline's copy), to check it is the one wanted.
  bool front_is(const BatchRequest& wanted) const;

  // Queues a batch into a free slot; std::logic_error when none is free or the batch exceeds max_batch.
  void submit(const BatchRequest& request);
  // Waits for the oldest queued batch and hands its slot over. If a worker threw while building it, the
  // slot is freed and the worker's exception is rethrown here. std::logic_error when nothing is queued.
  HostBatch take();
  // Gives a taken slot back for new batches.
  void release(int slot);
  // Drops every queued batch: rows not yet started are never built; waits for those being built.
  void discard_queued();

 private:
  enum class SlotState { Free, Queued, Taken };
  struct Slot {
    HostBatchBuffer buffer;
    SlotState state = SlotState::Free;
    const BatchSource* builder = nullptr;
    std::vector<int64_t> indices;  // the request's, reserved to max_batch
    AugmentKey key;
    uint64_t first_position = 0;
    int64_t rows = 0;
    int64_t next_row = 0;    // the first row no worker has claimed
    int64_t rows_done = 0;   // built, failed or dropped
    int in_flight = 0;       // workers building rows of this slot
    std::exception_ptr error;
    std::unique_ptr<SkippedFiles> skipped = std::make_unique<SkippedFiles>();
  };

  void work();
  Slot* slot_with_unclaimed_rows();
  bool finished(const Slot& slot) const { return slot.rows_done == slot.rows && slot.in_flight == 0; }

  int64_t max_batch_;
  int64_t claim_parts_;  // a batch's rows are claimed in this many parts, one per worker
  std::vector<Slot> slots_;
  std::vector<int> order_;  // queued slots, oldest first (a ring of slots_.size())
  size_t order_head_ = 0, order_count_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_, batch_done_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sb
