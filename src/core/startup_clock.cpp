#include "core/startup_clock.h"

#include <time.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>

#include "core/part_seconds.h"

namespace sb {

namespace {

constexpr double kUnmeasured = std::numeric_limits<double>::quiet_NaN();

#define SB_STARTUP_PART_INFO(name, kind, what) StartupPartInfo{#name, StartupPartKind::kind, what},
constexpr StartupPartInfo kParts[] = {SB_STARTUP_PARTS(SB_STARTUP_PART_INFO)};
#undef SB_STARTUP_PART_INFO
constexpr size_t kPartCount = sizeof kParts / sizeof kParts[0];

// Seconds between the process's creation and now, from the kernel: field 22 of /proc/self/stat is the
// start time in clock ticks since boot, and CLOCK_BOOTTIME is now since boot. NaN when unreadable.
double kernel_process_age() {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return kUnmeasured;
  // Field 2 is the command name in parentheses and may hold spaces: count fields after its last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return kUnmeasured;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field)) return kUnmeasured;
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  timespec now{};
  if (ticks_per_s <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return kUnmeasured;
  double start_ticks = 0;
  try {
    start_ticks = std::stod(field);
  } catch (...) {
    return kUnmeasured;
  }
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec) - start_ticks / static_cast<double>(ticks_per_s);
}

struct ProcessStart {
  StartupClock::time_point at;
  const char* source;
};

// Taken during static initialisation, before main(): the fallback, and the check of the kernel's value,
// which must lie before it (the kernel counts in clock ticks, 10 ms on most systems) and within a day.
ProcessStart find_process_start() {
  const StartupClock::time_point now = StartupClock::now();
  const double age = kernel_process_age();
  if (std::isfinite(age) && age >= 0 && age < 86400.0)
    return {now - std::chrono::duration_cast<StartupClock::duration>(std::chrono::duration<double>(age)), "/proc/self/stat"};
  return {now, "static initialisation"};
}

const ProcessStart kProcessStart = find_process_start();

PartSeconds<kPartCount>& part_seconds() {
  static PartSeconds<kPartCount> parts;
  return parts;
}

struct FirstStepEnd {
  std::mutex mutex;
  double seconds = kUnmeasured;  // since process start
};

FirstStepEnd& first_step_end() {
  static FirstStepEnd end;
  return end;
}

double seconds_between(StartupClock::time_point a, StartupClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

const StartupPartInfo* startup_parts() { return kParts; }
size_t startup_part_count() { return kPartCount; }

StartupClock::time_point process_start() { return kProcessStart.at; }
const char* process_start_source() { return kProcessStart.source; }
double seconds_since_process_start() { return seconds_between(kProcessStart.at, StartupClock::now()); }

void add_startup_seconds(StartupPart part, double seconds) { part_seconds().add(static_cast<size_t>(part), seconds); }

double startup_seconds(StartupPart part) { return part_seconds().get(static_cast<size_t>(part)); }

double seconds_to_first_step() {
  FirstStepEnd& end = first_step_end();
  const std::lock_guard<std::mutex> lock(end.mutex);
  return end.seconds;
}

void mark_first_step_end() {
  const double now = seconds_since_process_start();
  FirstStepEnd& end = first_step_end();
  const std::lock_guard<std::mutex> lock(end.mutex);
  if (std::isnan(end.seconds)) end.seconds = now;
}

void reset_startup_times() {
  part_seconds().reset();
  FirstStepEnd& end = first_step_end();
  const std::lock_guard<std::mutex> lock(end.mutex);
  end.seconds = kUnmeasured;
}

void StartupSpan::stop() {
  if (stopped_) return;
  stopped_ = true;
  add_startup_seconds(part_, seconds_between(start_, StartupClock::now()));
}

FirstStepTimer::FirstStepTimer() : first_(std::isnan(seconds_to_first_step())), start_(StartupClock::now()) {}

FirstStepTimer::~FirstStepTimer() {
  if (!first_ || !std::isnan(seconds_to_first_step())) return;
  add_startup_seconds(StartupPart::first_step, seconds_between(start_, StartupClock::now()));
  mark_first_step_end();
}

}  // namespace sb
