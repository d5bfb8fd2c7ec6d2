#include "core/shutdown_clock.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>

#include "core/startup_clock.h"

namespace sb {

namespace {

constexpr double kUnmeasured = std::numeric_limits<double>::quiet_NaN();

#define SB_SHUTDOWN_PART_INFO(name, what) ShutdownPartInfo{#name, what},
constexpr ShutdownPartInfo kParts[] = {SB_SHUTDOWN_PARTS(SB_SHUTDOWN_PART_INFO)};
#undef SB_SHUTDOWN_PART_INFO
constexpr size_t kPartCount = sizeof kParts / sizeof kParts[0];

struct Times {
  std::mutex mutex;
  std::array<double, kPartCount> seconds;
  double training_end = kUnmeasured;  // seconds since process start
  Times() { seconds.fill(kUnmeasured); }
};

Times& times() {
  static Times t;
  return t;
}

}  // namespace

const ShutdownPartInfo* shutdown_parts() { return kParts; }
size_t shutdown_part_count() { return kPartCount; }

void mark_training_end() {
  const double now = seconds_since_process_start();
  Times& t = times();
  const std::lock_guard<std::mutex> lock(t.mutex);
  if (std::isnan(t.training_end)) t.training_end = now;
}

bool training_ended() {
  Times& t = times();
  const std::lock_guard<std::mutex> lock(t.mutex);
  return !std::isnan(t.training_end);
}

void add_shutdown_seconds(ShutdownPart part, double seconds) {
  Times& t = times();
  const std::lock_guard<std::mutex> lock(t.mutex);
  double& slot = t.seconds[static_cast<size_t>(part)];
  slot = std::isnan(slot) ? seconds : slot + seconds;
}

double shutdown_seconds(ShutdownPart part) {
  Times& t = times();
  const std::lock_guard<std::mutex> lock(t.mutex);
  return t.seconds[static_cast<size_t>(part)];
}

std::string shutdown_attribute_name(ShutdownPart part) {
  return std::string("shutdown_") + kParts[static_cast<size_t>(part)].name + "_s";
}

void reset_shutdown_times() {
  Times& t = times();
  const std::lock_guard<std::mutex> lock(t.mutex);
  t.seconds.fill(kUnmeasured);
  t.training_end = kUnmeasured;
}

std::string shutdown_line() {
  const double now = seconds_since_process_start();
  Times& t = times();
  const std::lock_guard<std::mutex> lock(t.mutex);
  if (std::isnan(t.training_end)) return {};
  const double total = now - t.training_end;
  char text[128];
  std::snprintf(text, sizeof text, "shutdown: %.3f s from the end of training to the end of MPI (rank 0):", total);
  std::string line = text;
  double named = 0;
  for (size_t p = 0; p < kPartCount; ++p) {
    if (std::isnan(t.seconds[p])) continue;
    named += t.seconds[p];
    std::snprintf(text, sizeof text, " %s %.3f s,", kParts[p].name, t.seconds[p]);
    line += text;
  }
  std::snprintf(text, sizeof text, " other %.3f s; %.3f s from process start", total - named, now);
  return line + text;
}

ShutdownSpan::ShutdownSpan(ShutdownPart part) : part_(part), start_s_(seconds_since_process_start()) {}

ShutdownSpan::~ShutdownSpan() { add_shutdown_seconds(part_, seconds_since_process_start() - start_s_); }

}  // namespace sb
