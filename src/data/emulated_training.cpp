#include "data/emulated_training.h"

#include <chrono>
#include <thread>
#include <vector>

#include "data/batch_schedule.h"
#include "data/cold_cache.h"
#include "data/host_batch_pipeline.h"
#include "data/host_ring.h"
#include "data/image/encoded_images.h"
#include "data/image_data_sets.h"

namespace sb {
namespace {

using Clock = std::chrono::steady_clock;

// The ring of host buffers the pipeline builds into, and the schedule of the rank's batches.
class EmulatedInput {
 public:
  EmulatedInput(const Dataset& data, const EmulationSettings& s, const BatchSource& source, EmulatedTarget& target)
      : s_(s),
        source_(source),
        target_(target),
        schedule_(data.size(), s.ranks, s.rank, s.seed, true, s.batch,
                  shard_sizes(data)) {
    // Host buffers per emulated GPU, as the training host input's ring holds per GPU (data/host_ring.h): a
    // target that reads the batches in place has the training's input slots in its ring too.
    const int slots = (kHostRingSlots + (target.reads_in_place() ? kInputSlotsPerGpu : 0)) * s.gpus;
    const int64_t sample_bytes = source.sample_bytes();
    images_.resize(static_cast<size_t>(slots * s.batch * sample_bytes));
    labels_.resize(static_cast<size_t>(slots * s.batch));
    std::vector<HostBatchBuffer> buffers;
    for (int64_t b = 0; b < slots; ++b) {
      buffers.push_back(HostBatchBuffer{images_.data() + static_cast<size_t>(b * s.batch * sample_bytes), labels_.data() + b * s.batch});
      target.add_slot(buffers.back().images);
    }
    pipeline_ = std::make_unique<HostBatchPipeline>(s.workers, std::move(buffers), s.batch, sample_bytes);
  }

  // Queues batches into every free slot: the workers build ahead while the GPUs compute.
  void fill() {
    while (pipeline_->free_slots() > 0) {
      pipeline_->submit(BatchRequest{&source_, schedule_.indices(next_), AugmentKey{s_.seed, next_.epoch, s_.rank}, next_.first_position});
      next_ = schedule_.after(next_);
    }
  }

  // One step: each emulated GPU takes its batch (waiting for the workers where it is not built yet), the
  // batch is uploaded and its slot goes back (read in place: once the step's compute is over); the GPUs
  // compute side by side.
  void step(double compute_s) {
    std::vector<int> held;  // the slots the step's batches are read from in place
    for (int g = 0; g < s_.gpus; ++g) {
      const HostBatch batch = pipeline_->take();
      target_.upload(batch);
      if (target_.reads_in_place()) {
        held.push_back(batch.slot);
      } else {
        pipeline_->release(batch.slot);
      }
    }
    fill();
    std::this_thread::sleep_until(Clock::now() + std::chrono::duration<double>(compute_s));
    for (const int slot : held) pipeline_->release(slot);
    fill();
  }

 private:
  const EmulationSettings& s_;
  const BatchSource& source_;
  EmulatedTarget& target_;
  BatchSchedule schedule_;
  ScheduledBatch next_{0, 0, 0};
  std::vector<std::byte> images_;
  std::vector<int32_t> labels_;
  std::unique_ptr<HostBatchPipeline> pipeline_;
};

class HostMemoryTarget final : public EmulatedTarget {
 public:
  explicit HostMemoryTarget(std::unique_ptr<BatchSource> source) : source_(std::move(source)) {}
  const BatchSource& source() const override { return *source_; }

 private:
  std::unique_ptr<BatchSource> source_;
};

}  // namespace

MakeEmulatedTarget host_memory_target(const Dataset& data, BatchFormat format, int rank) {
  return [&data, format, rank](InputCounters& counters) -> std::unique_ptr<EmulatedTarget> {
    return std::make_unique<HostMemoryTarget>(make_batch_source(data, true, BatchOptions{}, format, BadImages::Fail, rank, counters));
  };
}

EmulationRun run_emulated_training(const Dataset& data, const EmulationSettings& s) {
  return run_emulated_training(data, s, host_memory_target(data, s.format, s.rank));
}

EmulationRun run_emulated_training(const Dataset& data, const EmulationSettings& s, const MakeEmulatedTarget& make_target) {
  EmulationRun run;
  if (s.gpus < 1) return run;
  InputCounters counters;
  const std::unique_ptr<EmulatedTarget> target = make_target(counters);
  std::unique_ptr<BatchSource> dropping;
  if (s.drop_pages && data.streamed()) {
    drop_files_of_rank(*data.encoded, s.ranks, s.rank);
    dropping = dropping_pages_after_reads(target->source(), *data.encoded);
  }
  EmulatedInput input(data, s, dropping ? *dropping : target->source(), *target);
  const double compute_s = static_cast<double>(s.batch) / s.rate;
  input.fill();
  for (int64_t i = 0; i < s.warm_up_steps; ++i) input.step(compute_s);
  const InputTotals before = counters.totals();
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < s.steps; ++i) input.step(compute_s);
  run.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  run.compute_s = compute_s * static_cast<double>(s.steps);
  run.images = s.steps * s.gpus * s.batch;
  run.totals = counters.totals() - before;
  return run;
}

}  // namespace sb
