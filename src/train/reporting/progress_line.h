// The timed progress line of `--log-seconds S`: within an epoch, at most one line every S seconds, for a
// Slurm .out file (plain lines, no carriage returns). For example:
//   2026-11-26T16:50:03.125Z epoch 2/10 step 120/469 | 10,234 img/s, 5,117 per GPU | loss 0.4321 |
//   ETA epoch 00:00:35, run 00:12:10
// (one line). The rates and the loss are of the epoch so far; the loss is rank 0's running mean. The
// run's ETA counts the epochs still to come at this epoch's pace, plus the last evaluation's time each.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace sb {

// Where the epoch stands when a line is due.
struct ProgressPoint {
  int epoch = 0;                 // 0-based
  int epochs = 1;
  int64_t step = 0;              // steps of this epoch done, resumed ones included
  int64_t steps = 1;             // in the epoch
  int64_t steps_timed = 0;       // of them, done since the epoch (or its resume) started here
  double epoch_seconds = 0;      // since then
  int64_t images = 0;            // trained since then, over all ranks
  int ranks = 1;
  const char* rank_unit = "GPU"; // what one rank is: "GPU" or "rank"
  double loss = 0;               // NaN when not known
  double eval_seconds = 0;       // the last evaluation's time (0 before the first)
};

// 120,000 (rounded); "n/a" for NaN or an infinity.
std::string with_thousands(double v);
// "2026-11-26T16:50:03.125Z"
std::string utc_timestamp(std::chrono::system_clock::time_point t);
// "00:12:10" (hours grow past 99 as needed); "n/a" for a negative or non-finite number of seconds.
std::string clock_duration(double seconds);
// The line, without its line break.
std::string progress_line(const ProgressPoint& p, std::chrono::system_clock::time_point now);

// When lines are due: at most one every `every_seconds` (0: never), the first `every_seconds` after the
// epoch's start. Times are seconds since then; the caller restarts it at each epoch.
class ProgressSchedule {
 public:
  explicit ProgressSchedule(double every_seconds) : every_(every_seconds) {}
  void restart() { last_ = 0; }
  // Whether a line is due at `seconds`; if so, it counts as printed then.
  bool due(double seconds);

 private:
  double every_;
  double last_ = 0;
};

}  // namespace sb
