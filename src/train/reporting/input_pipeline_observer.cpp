#include "train/reporting/input_pipeline_observer.h"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "comm/string_collectives.h"
#include "core/log.h"
#include "train/run/run_summary.h"

namespace sb {
namespace {

// The names of the files every rank skipped, in rank order; each rank sends its own joined by newlines.
std::vector<std::string> skipped_names_of_all_ranks(Communicator& comm, const std::vector<std::string>& mine) {
  std::string joined;
  for (const std::string& name : mine) joined += name + '\n';
  std::vector<std::string> names;
  for (const std::string& text : allgather_strings(comm, joined)) {
    for (size_t begin = 0, end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1)
      names.push_back(text.substr(begin, end - begin));
  }
  return names;
}

// "epoch 2: --bad-images skip left out 5 files that can't be read or decoded: A, B, C and 2 more".
std::string skipped_line(int epoch, int64_t skipped, const std::vector<std::string>& names) {
  std::string line = "epoch " + std::to_string(epoch + 1) + ": --bad-images skip left out " + std::to_string(skipped) +
                     (skipped == 1 ? " file that can't" : " files that can't") + " be read or decoded";
  const size_t shown = std::min(names.size(), kSkippedNamesShown);
  for (size_t i = 0; i < shown; ++i) line += (i == 0 ? ": " : ", ") + names[i];
  if (skipped > static_cast<int64_t>(shown)) line += " and " + std::to_string(skipped - static_cast<int64_t>(shown)) + " more";
  return line;
}

// The epoch's input columns from the ranks' summed totals; wall_s: the epoch's wall time (NaN when the
// epoch was resumed after its last step).
void write_columns(EpochRow& row, const InputTotals& in, double wall_s) {
  row.input_read_s = in.read_seconds;
  row.input_decode_s = in.decode_seconds;
  row.input_augment_s = in.augment_seconds;
  row.input_copy_s = in.copy_seconds;
  row.input_bytes_per_s = wall_s > 0 ? static_cast<double>(in.bytes) / wall_s : kNotMeasured;
  const double busy = in.read_seconds + in.decode_seconds + in.augment_seconds;
  row.input_images_per_worker_s = busy > 0 ? static_cast<double>(in.images) / busy : kNotMeasured;
  row.images_skipped = in.skipped;
  row.gpu_decode_cpu_fallbacks = in.cpu_fallbacks;
}

}  // namespace

void InputPipelineObserver::measure_epoch(EpochSummary& s) {
  const std::optional<InputTotals> now = measurements_.input_totals();
  if (!now || !before_) return;  // every rank reads the same kind of data: all return here, or none
  const InputTotals epoch = *now - *before_;
  before_ = now;
  double v[] = {epoch.read_seconds, epoch.decode_seconds, epoch.augment_seconds, epoch.copy_seconds, static_cast<double>(epoch.bytes),
                static_cast<double>(epoch.images), static_cast<double>(epoch.skipped), static_cast<double>(epoch.cpu_fallbacks)};
  comm_.allreduce_sum(std::span<double>(v));
  const InputTotals sum{v[0], v[1], v[2], v[3], static_cast<int64_t>(v[4]), static_cast<int64_t>(v[5]), static_cast<int64_t>(v[6]),
                        static_cast<int64_t>(v[7]), {}};
  write_columns(s.measured, sum, s.wall_max);
  s.input = sum;
  if (sum.skipped > 0) {  // every rank sees the sum, so all gather or none
    const std::vector<std::string> names = skipped_names_of_all_ranks(comm_, epoch.last_skipped);
    log0("%s\n", skipped_line(s.epoch, sum.skipped, names).c_str());
  }
}

}  // namespace sb
