#include "cli/io_rate_from.h"

#include <cmath>
#include <exception>
#include <vector>

#include "core/error.h"
#include "data/gpu_emulation.h"
#include "metrics/results_reader.h"
#include "train/study/step_split.h"

namespace sb {

double rate_per_gpu_from(const std::string& path) {
  const std::string hint = "; give the results file of a scalebench train run (--out of train), or --target-rate IMG/S";
  std::vector<double> rates;
  std::vector<int64_t> resumed;
  int64_t gpus = 0;
  try {
    const ResultsReader reader(path);
    if (!reader.has("/epochs") || !reader.has_attribute("world_size"))
      throw UserError("--rate-from " + path + ": not the results file of a train run (no /epochs table)" + hint);
    gpus = reader.int_attribute("world_size");
    for (const EpochRow& row : reader.epochs()) {
      rates.push_back(row.images_per_s);
      resumed.push_back(row.steps_resumed);
    }
  } catch (const UserError& e) {
    if (std::string(e.what()).rfind("--rate-from", 0) == 0) throw;
    throw UserError("--rate-from " + path + ": " + e.what() + hint);
  } catch (const std::exception& e) {
    throw UserError("--rate-from " + path + ": cannot read it as a train results file (" + e.what() + ")" + hint);
  }
  const double rate = steady_rate_per_gpu(rates, resumed, kTrainSettleEpochs, gpus);
  if (!std::isfinite(rate))
    throw UserError("--rate-from " + path + ": the run has no finished epoch with a measured images/s" + hint);
  return rate;
}

}  // namespace sb
