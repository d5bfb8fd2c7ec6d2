// The arithmetic of `scalebench io --emulate-gpus`: which emulated GPUs each rank carries, the
// accelerator utilisation (AU) of a run, the input stage that limits it, the workers a rate needs, and
// the largest count per node that keeps AU at the bar (MLPerf Storage's 90%).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/input_counters.h"

namespace sb {

// MLPerf Storage's bar for ResNet-50: the emulated GPUs computed at least this share of the wall time.
inline constexpr double kUtilisationBar = 0.90;

// "1,2,4,8": emulated GPUs per node, each >= 1, ascending without repeats. Throws UserError naming
// --emulate-gpus and the value otherwise.
std::vector<int> parse_emulated_gpus(const std::string& list);

// The emulated GPUs rank `local_rank` of a node's `local_size` ranks carries of the node's `per_node`:
// an even share, the first ranks one more where it does not divide (0 where per_node < local_size).
int emulated_gpus_of_rank(int per_node, int local_rank, int local_size);

// Emulated compute over wall time; 0 for no wall time.
double accelerator_utilisation(double compute_s, double wall_s);

// The stages of the pipeline of image files, as their counters count them (input_counters.h). Decode
// is the workers' decoding and their crop, resize and normalisation together: the CPU work of a sample.
enum class InputStage { Read, Decode, Copy };
const char* stage_name(InputStage stage);
// The stage that took the most time.
InputStage limiting_stage(const InputTotals& totals);

// The images one worker builds per busy second (reading and decoding, the crop included); 0 when `totals`
// counted no image or no busy time.
double images_per_worker_second(const InputTotals& totals);
// Workers that would build `images_per_s` at that rate: the one estimate of `scalebench io --target-rate`,
// with or without --emulate-gpus. 0 when `totals` counted no image.
int workers_needed(double images_per_s, const InputTotals& totals);

struct EmulatedCount {
  int gpus_per_node = 0;
  double utilisation = 0;
};
// The largest count whose utilisation is at least `bar`; 0 when none is.
int largest_count_meeting(const std::vector<EmulatedCount>& counts, double bar = kUtilisationBar);

// A train run's rate per GPU: the median images/s of its steady epochs (after the first `settle`, at
// least the last; whole epochs only: steps_resumed 0, a measured rate) over `gpus`. NaN when none.
double steady_rate_per_gpu(const std::vector<double>& images_per_s, const std::vector<int64_t>& steps_resumed,
                           int settle, int64_t gpus);

}  // namespace sb
