// The input pipeline of image files alone, with no model (scalebench io): how many images per second a
// number of workers decode and augment, and how many of the host's cores that keeps busy.
#pragma once
#include <cstdint>
#include <functional>

#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/input_counters.h"

namespace sb {

struct InputRate {
  double images_per_s = 0;
  double bytes_per_s = 0;
  double busy_cores = 0;  // the process's CPU time over the wall time
  InputTotals totals;     // of the timed batches
};

// Times `batches` training batches of `batch` images after `warm_up` untimed ones. `run_batches(n)` builds
// n batches of the training set in order and returns when they are built (and, on a GPU, in its memory);
// `counters` are those its workers count into.
InputRate time_input(int64_t batch, int64_t warm_up, int64_t batches, const InputCounters& counters,
                     const std::function<void(int64_t first, int64_t count)>& run_batches);

// --decode cpu on the host alone, for a machine without a GPU: `workers` threads build the batches of
// `data`'s training samples in `format` into host memory.
InputRate measure_cpu_input(const Dataset& data, int workers, int64_t batch, int64_t warm_up, int64_t batches,
                            BatchFormat format, uint64_t seed);

}  // namespace sb
