#include "data/gpu_emulation.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/median.h"

namespace sb {
namespace {

constexpr int kMaxEmulatedPerNode = 4096;

int parse_count(const std::string& item, const std::string& list) {
  int value = 0;
  const char* end = item.data() + item.size();
  const auto [at, ec] = std::from_chars(item.data(), end, value);
  if (item.empty() || ec != std::errc() || at != end || value < 1 || value > kMaxEmulatedPerNode)
    throw UserError("--emulate-gpus '" + list + "': '" + item + "' is not a count of GPUs per node from 1 to " +
                    std::to_string(kMaxEmulatedPerNode) + "; give e.g. 1,2,4,8");
  return value;
}

}  // namespace

std::vector<int> parse_emulated_gpus(const std::string& list) {
  std::vector<int> counts;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    counts.push_back(parse_count(list.substr(start, comma - start), list));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (size_t i = 1; i < counts.size(); ++i)
    if (counts[i] <= counts[i - 1])
      throw UserError("--emulate-gpus '" + list + "': give the counts ascending, each once; e.g. 1,2,4,8");
  return counts;
}

int emulated_gpus_of_rank(int per_node, int local_rank, int local_size) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size) return 0;
  return per_node / local_size + (local_rank < per_node % local_size ? 1 : 0);
}

double accelerator_utilisation(double compute_s, double wall_s) { return wall_s > 0 ? compute_s / wall_s : 0; }

const char* stage_name(InputStage stage) {
  switch (stage) {
    case InputStage::Read: return "read";
    case InputStage::Decode: return "decode";
    case InputStage::Copy: return "copy";
  }
  return "?";
}

InputStage limiting_stage(const InputTotals& totals) {
  const double decode = totals.decode_seconds + totals.augment_seconds;
  if (totals.read_seconds > decode && totals.read_seconds >= totals.copy_seconds) return InputStage::Read;
  if (totals.copy_seconds > decode) return InputStage::Copy;
  return InputStage::Decode;
}

double images_per_worker_second(const InputTotals& totals) {
  const double busy = totals.read_seconds + totals.decode_seconds + totals.augment_seconds;
  return totals.images > 0 && busy > 0 ? static_cast<double>(totals.images) / busy : 0;
}

int workers_needed(double images_per_s, const InputTotals& totals) {
  if (totals.images <= 0) return 0;
  const double per_worker = images_per_worker_second(totals);
  if (per_worker <= 0) return 1;  // no busy time counted: one worker kept up
  return std::max(1, static_cast<int>(std::ceil(images_per_s / per_worker - 1e-9)));
}

int largest_count_meeting(const std::vector<EmulatedCount>& counts, double bar) {
  int largest = 0;
  for (const EmulatedCount& c : counts)
    if (c.utilisation >= bar && c.gpus_per_node > largest) largest = c.gpus_per_node;
  return largest;
}

double steady_rate_per_gpu(const std::vector<double>& images_per_s, const std::vector<int64_t>& steps_resumed,
                           int settle, int64_t gpus) {
  std::vector<double> steady;
  const size_t n = images_per_s.size();
  for (size_t e = 0; e < n; ++e) {
    const bool settled = e >= static_cast<size_t>(std::max(settle, 0)) || e + 1 == n;
    const bool whole = e >= steps_resumed.size() || steps_resumed[e] == 0;
    if (settled && whole && std::isfinite(images_per_s[e]) && images_per_s[e] > 0) steady.push_back(images_per_s[e]);
  }
  if (steady.empty() || gpus < 1) return std::numeric_limits<double>::quiet_NaN();
  return median_of(steady) / static_cast<double>(gpus);
}

}  // namespace sb
