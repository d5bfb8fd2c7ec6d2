// `scalebench io --rate-from FILE.h5`: the rate per GPU of a `train` run, for the emulated GPUs.
#pragma once
#include <string>

namespace sb {

// The median images/s of the run's steady epochs (after the first, at least the last; whole epochs only)
// over its world_size. Throws UserError naming the file when it is not a train results file with a
// measured epoch.
double rate_per_gpu_from(const std::string& path);

}  // namespace sb
