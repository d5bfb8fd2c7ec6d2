#include "data/input_rate.h"

#include <sys/resource.h>

#include <chrono>
#include <vector>

#include "data/batch_schedule.h"
#include "data/host_batch_pipeline.h"
#include "data/image_data_sets.h"

namespace sb {
namespace {

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

InputRate time_input(int64_t batch, int64_t warm_up, int64_t batches, const InputCounters& counters,
                     const std::function<void(int64_t first, int64_t count)>& run_batches) {
  run_batches(0, warm_up);
  const InputTotals before = counters.totals();
  const double cpu_before = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  run_batches(warm_up, batches);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  InputRate rate;
  rate.totals = counters.totals() - before;
  rate.images_per_s = static_cast<double>(batch * batches) / wall;
  rate.bytes_per_s = static_cast<double>(rate.totals.bytes) / wall;
  rate.busy_cores = (process_cpu_seconds() - cpu_before) / wall;
  return rate;
}

InputRate measure_cpu_input(const Dataset& data, int workers, int64_t batch, int64_t warm_up, int64_t batches,
                            BatchFormat format, uint64_t seed) {
  InputCounters counters;
  const auto source = make_batch_source(data, true, BatchOptions{}, format, BadImages::Fail, 0, counters);
  constexpr int kSlots = 4;
  const auto sample_bytes = source->sample_bytes();
  std::vector<std::byte> images(static_cast<size_t>(kSlots * batch * sample_bytes));
  std::vector<int32_t> labels(static_cast<size_t>(kSlots * batch));
  std::vector<HostBatchBuffer> buffers;
  for (int s = 0; s < kSlots; ++s)
    buffers.push_back(HostBatchBuffer{images.data() + static_cast<size_t>(s * batch * sample_bytes), labels.data() + s * batch});
  HostBatchPipeline pipeline(workers, std::move(buffers), batch, sample_bytes);
  // The training batches in order, epoch after epoch, whole batches only.
  BatchSchedule schedule(data.size(), 1, 0, seed, true, batch, shard_sizes(data));
  ScheduledBatch next{0, 0, 0};
  const auto request = [&] {
    pipeline.submit(BatchRequest{source.get(), schedule.indices(next), AugmentKey{seed, next.epoch, 0}, next.first_position});
    next = schedule.after(next);
  };
  return time_input(batch, warm_up, batches, counters, [&](int64_t first, int64_t count) {
    int64_t submitted = first;
    for (int64_t b = first; b < first + count; ++b) {
      for (; submitted < first + count && pipeline.free_slots() > 0; ++submitted) request();
      pipeline.release(pipeline.take().slot);
    }
  });
}

}  // namespace sb
