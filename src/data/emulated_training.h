// One rank's part of `scalebench io --emulate-gpus`: the training input pipeline of image files feeding
// emulated GPUs. Each emulated GPU computes a batch in batch / rate seconds (a wait); the rank's GPUs
// compute their batches side by side, in step, as data-parallel training's GPUs do, while the workers
// build the next batches into the ring behind them, as training's host input does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/host_batch_pipeline.h"
#include "data/input_counters.h"

namespace sb {

struct EmulationSettings {
  int gpus = 1;               // emulated on this rank (0: the rank waits out the count)
  int workers = 1;            // the rank's worker threads
  int64_t batch = 256;        // per emulated GPU and step
  int64_t warm_up_steps = 8;  // untimed, before the timed ones
  int64_t steps = 40;         // timed
  double rate = 0;            // images/s one emulated GPU computes
  BatchFormat format;
  uint64_t seed = 1;
  int ranks = 1, rank = 0;    // this rank reads its share of the samples (the distributed sampler's)
  bool drop_pages = false;    // --cold-cache: drop each file's cached pages after reading it
};

struct EmulationRun {
  double compute_s = 0;  // the emulated GPUs' compute over the timed steps
  double wall_s = 0;     // the timed steps' wall time
  int64_t images = 0;    // consumed by the emulated GPUs in the timed steps
  InputTotals totals;    // the pipeline's work in the timed steps
};

// Where the workers build a rank's batches and where a taken batch goes: host memory alone (--decode cpu
// without a GPU), or a GPU (cuda/emulated_gpu_target.h: the batches decoded by nvJPEG into device memory,
// where the step reads them, as training's --decode gpu does).
class EmulatedTarget {
 public:
  virtual ~EmulatedTarget() = default;
  // The source the workers build the batches with; its sample_bytes() sizes the host rows.
  virtual const BatchSource& source() const = 0;
  // Each ring slot's host rows, once, before any batch is built into them.
  virtual void add_slot(const std::byte* host_rows) { (void)host_rows; }
  // A batch the workers built, taken for a step: its upload, returning once it has arrived.
  virtual void upload(const HostBatch& batch) { (void)batch; }
  // Whether the step reads the batch where the workers built it: its slot then stays taken until the
  // step's compute is over, and the ring has the training's input slots as slots of its own.
  virtual bool reads_in_place() const { return false; }
};

// Makes the target whose sources count into `counters`.
using MakeEmulatedTarget = std::function<std::unique_ptr<EmulatedTarget>(InputCounters& counters)>;

// The batches built on the CPU into host memory (--decode cpu without a GPU).
MakeEmulatedTarget host_memory_target(const Dataset& data, BatchFormat format, int rank);

// Runs the warm-up and the timed steps on `data`'s training samples into the target `make_target` makes;
// a rank with no emulated GPU returns an empty run at once.
EmulationRun run_emulated_training(const Dataset& data, const EmulationSettings& settings,
                                   const MakeEmulatedTarget& make_target);
// The same into host memory.
EmulationRun run_emulated_training(const Dataset& data, const EmulationSettings& settings);

}  // namespace sb
