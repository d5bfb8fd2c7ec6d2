// --input host, and every run on image files: the data sets stay in host memory (image files: on disk, decoded as they
// are read); a pool of worker threads (HostBatchPipeline) builds each batch in the compute dtype and layout into a ring
// of host buffers (pinned unless --no-pin-memory), and a copy stream uploads it into the device buffer of its step
// slot, which the captured step graph reads at a fixed address. With --decode gpu the workers' nvJPEG decoders build
// each batch in the device buffer of its ring slot, and the step reads it there: the engine captures a step graph per
// ring slot, and the ring slot goes back to the workers once the step that read it has run. The training batches are
// built ahead from the trainer's sampler (BatchSchedule), so that batch k+1 is built and uploaded while batch k trains;
// each batch is checked against the one the trainer asks for, and a batch not predicted is built on demand. After an
// epoch's last batch the workers build the evaluation that followed the last epoch, then the next epoch's batches.
// Device memory: two batches and their labels (--decode gpu: six batches), whatever the data set's size.
#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "data/batch_schedule.h"
#include "data/batch_source.h"
#include "data/cuda/gpu_decode_source.h"
#include "data/cuda/input_pipeline.h"
#include "data/host_batch_pipeline.h"
#include "data/input_counters.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"

namespace sb::cuda {

class HostInput final : public InputPipeline {
 public:
  // `train` and `test` must outlive this. wait: how the host waits for the GPU (under the watchdog).
  HostInput(const Dataset& train, const Dataset& test, const InputPipelineOptions& options, WaitForEvent wait);
  ~HostInput() override;

  bool from_host() const override { return true; }
  // The training batch `indices` at `position` of `epoch` in step slot `slot`: takes it from the workers
  // (building it now if it was not predicted), queues its upload on the copy stream after the step that
  // last read the slot, and makes `compute` wait for the upload. Then queues the next batches for the workers.
  void stage_training(int slot, std::span<const int64_t> indices, int epoch, uint64_t position,
                      cudaStream_t compute) override;
  // --decode gpu: the ring slots' device batches; otherwise the slot's own buffer.
  int training_buffers() const override { return gpu_decoders_ ? ring_slots_ : 1; }
  int staged_buffer(int slot) const override;
  // The slot's batch (staged above) as the network's input, were it in `buffer`.
  DeviceTensor training_batch(int slot, int buffer, int64_t rows, const int64_t*, const DeviceDrawKey&,
                              cudaStream_t) override {
    return input_in(slot, buffer, rows);
  }
  // Stages evaluation batch `number` as a training batch is staged (built ahead when the evaluation is the
  // one that came last), building the following ones meanwhile; once every part is queued, the free slots
  // build the training batches that come next.
  DeviceTensor evaluation_batch(int slot, std::span<const int64_t> indices, int64_t evaluation_batch, int64_t number,
                                cudaStream_t compute) override;
  // After the work that reads `slot`'s batch is queued on `compute`: the next upload into it waits for it
  // (--decode gpu: the workers' next batch into its ring slot).
  void consumed(int slot, cudaStream_t compute) override;

  // The batch staged into `slot`, of `rows` samples, as the network's input, and its labels.
  DeviceTensor input(int slot, int64_t rows) const { return input_in(slot, staged_buffer(slot), rows); }
  const int32_t* labels(int slot) const override;
  int workers() const { return pipeline_->workers(); }
  // Image files: the workers' reading, decoding and augmenting so far; nullopt for a data set in memory.
  std::optional<InputTotals> input_totals() const override;
  const InputCounters& counters() const { return counters_; }
  // The training batches that were not built ahead (the first of a run, and any the schedule did not
  // predict): each made its step wait for the whole of its building.
  int64_t training_batches_built_on_demand() const { return training_built_on_demand_; }
  // The evaluation batches that were not built ahead: the first evaluation's first, and those of an
  // evaluation unlike the one before it.
  int64_t evaluation_batches_built_on_demand() const { return evaluation_built_on_demand_; }

 private:
  void upload(int slot, const HostBatch& batch, cudaStream_t compute);
  // --decode gpu: the ring slot staged into `slot` goes back to the workers after the work queued on
  // `compute` so far, which reads it.
  void release_after(int slot, cudaStream_t compute);
  DeviceTensor input_in(int slot, int buffer, int64_t rows) const;
  // Gives back the ring slots whose upload (--decode gpu: whose step) has finished; with `all`, waits for
  // every one.
  void reclaim(bool all);
  // Whether a slot is free for the workers, after giving back those whose upload has finished.
  bool slot_free_now();
  // Makes `wanted` the next batch out of the pipeline, dropping batches built ahead for another.
  void queue_unless_next(const BatchRequest& wanted);
  // Queues the scheduled training batches into the free slots: those after last_predicted_, or, where an
  // evaluation dropped the prediction, from next_training_ on. Between two epochs, the parts of the
  // expected evaluation come first.
  void queue_predicted_training();
  // Part `part` of an evaluation of `indices` in batches of `batch`.
  BatchRequest evaluation_request(std::span<const int64_t> indices, int64_t batch, int64_t part) const;

  const Dataset& train_;

  InputPipelineOptions options_;
  WaitForEvent wait_;
  InputCounters counters_;
  std::unique_ptr<GpuDecoders> gpu_decoders_;  // --decode gpu: the workers' nvJPEG decoders
  std::vector<DeviceBuffer> decoded_batches_;    // --decode gpu: per ring slot, the batch the workers decode
  int ring_slots_ = 0;
  // --decode gpu: per step slot, the ring slot of its last batch, and whether its step still holds it.
  std::array<int, kInputSlots> staged_ring_{};
  std::array<bool, kInputSlots> holds_ring_{};
  std::unique_ptr<BatchSource> train_builder_, test_builder_;
  BatchSchedule schedule_;
  std::optional<ScheduledBatch> last_predicted_;  // the last training batch queued from the schedule
  std::optional<ScheduledBatch> next_training_;   // the scheduled batch after the last one trained
  int64_t training_built_on_demand_ = 0;          // training_batches_built_on_demand
  int64_t evaluation_built_on_demand_ = 0;        // evaluation_batches_built_on_demand
  // The last evaluation's indices and batch: the one expected after each epoch.
  std::vector<int64_t> expected_evaluation_;
  int64_t expected_evaluation_batch_ = 0;
  int64_t evaluation_after_epoch_ = -1;  // the epoch whose following evaluation is being queued, or -1
  int64_t evaluation_parts_queued_ = 0;  // of that evaluation, or of the one under way
  PinnedArray<std::byte> pinned_;
  std::vector<std::byte> pageable_;
  std::unique_ptr<HostBatchPipeline> pipeline_;
  CudaStream copy_stream_;
  std::vector<CudaEvent> uploaded_;  // per ring slot
  std::vector<CudaEvent> read_;      // --decode gpu: per ring slot, after the step that read its batch
  std::vector<CudaEvent> upload_started_, upload_finished_;  // per ring slot, timed (image files only)
  std::vector<int> in_use_;          // ring slots taken, waiting for their upload (or step), oldest first
  std::array<CudaEvent, kInputSlots> consumed_;
  std::array<DeviceBuffer, kInputSlots> inputs_, labels_;  // inputs_: not with --decode gpu
};

}  // namespace sb::cuda
