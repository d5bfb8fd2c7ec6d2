// The start-up parts of a run (core/startup_clock.h) reduced over the ranks: the `startup:` line that rank
// 0 prints and the `startup_<part>_s` root attributes of `train` files.
#pragma once
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/startup_clock.h"
#include "metrics/results_file.h"

namespace sb {

struct StartupReport {
  // Per part of startup_parts(), in its order: the largest of the ranks' seconds; NaN where no rank timed it.
  std::vector<double> seconds;
  // From process start to the end of the first training step, the largest over the ranks; NaN without a step.
  double to_first_step = 0;
};

// Collective over comm. The remainder part is each rank's time to the first step less its timed parts
// before it, then the largest over the ranks.
StartupReport gather_startup(Communicator& comm);

// This rank's start-up parts at one moment, so that what a later stretch (a `scale` configuration) adds
// can be told apart.
struct StartupSnapshot {
  std::vector<double> seconds;  // per part; NaN where not timed yet
};
StartupSnapshot startup_snapshot();

// Collective over comm: as gather_startup, but each part holds only the seconds each rank added after
// `since` (NaN where no rank added any). The first step, the remainder and to_first_step are NaN: they
// belong to the process's start-up, which gather_startup reports.
StartupReport gather_startup_since(Communicator& comm, const StartupSnapshot& since);

// "startup: 2.412 s from process start to the end of the first step (slowest rank per part): launch 0.210 s,
// ...; after it: graph_capture 0.015 s". Parts no rank timed are left out.
std::string startup_line(const StartupReport& report);

// The root attribute of each part, `startup_<part>_s`, and `startup_to_first_step_s`, for
// ResultsFile::write_root_attributes or close.
std::vector<NamedValue> startup_attributes(const StartupReport& report);
// The same attributes on a run's group (a `scale` configuration's /configs group).
void write_startup_attributes(RunWriter& run, const StartupReport& report);

// Times an engine's construction from construction to destruction: what the engine's own parts
// (cuda_context, network, nccl, upload, peak_gemm) leave of it goes to engine_other.
class EngineBuildTimer {
 public:
  EngineBuildTimer();
  ~EngineBuildTimer();
  EngineBuildTimer(const EngineBuildTimer&) = delete;
  EngineBuildTimer& operator=(const EngineBuildTimer&) = delete;

 private:
  double parts_before_;
  StartupClock::time_point start_;
};

// The root attribute name of a part (index into startup_parts()).
std::string startup_attribute_name(size_t part);

}  // namespace sb
