#include "core/shutdown_clock.h"

#include <atomic>
#include <cstdio>

#include "core/part_seconds.h"
#include "core/startup_clock.h"

namespace sb {

namespace {

#define SB_SHUTDOWN_PART_INFO(name, what) ShutdownPartInfo{#name, what},
constexpr ShutdownPartInfo kParts[] = {SB_SHUTDOWN_PARTS(SB_SHUTDOWN_PART_INFO)};
#undef SB_SHUTDOWN_PART_INFO
constexpr size_t kPartCount = sizeof kParts / sizeof kParts[0];

PartSeconds<kPartCount>& part_seconds() {
  static PartSeconds<kPartCount> parts;
  return parts;
}

// Seconds since process start at the end of training; negative until then.
std::atomic<double> g_training_end{-1.0};

}  // namespace

const ShutdownPartInfo* shutdown_parts() { return kParts; }
size_t shutdown_part_count() { return kPartCount; }

void mark_training_end() {
  double unset = -1.0;
  g_training_end.compare_exchange_strong(unset, seconds_since_process_start());
}

bool training_ended() { return g_training_end.load() >= 0; }

void add_shutdown_seconds(ShutdownPart part, double seconds) { part_seconds().add(static_cast<size_t>(part), seconds); }

double shutdown_seconds(ShutdownPart part) { return part_seconds().get(static_cast<size_t>(part)); }

std::string shutdown_attribute_name(ShutdownPart part) {
  return std::string("shutdown_") + kParts[static_cast<size_t>(part)].name + "_s";
}

void reset_shutdown_times() {
  part_seconds().reset();
  g_training_end.store(-1.0);
}

std::string shutdown_line() {
  const double now = seconds_since_process_start();
  if (!training_ended()) return {};
  const double total = now - g_training_end.load();
  char text[128];
  std::snprintf(text, sizeof text, "shutdown: %.3f s from the end of training to the end of MPI (rank 0):", total);
  std::string line = text;
  double named = 0;
  const auto seconds = part_seconds().all();
  for (size_t p = 0; p < kPartCount; ++p) {
    if (std::isnan(seconds[p])) continue;
    named += seconds[p];
    std::snprintf(text, sizeof text, " %s %.3f s,", kParts[p].name, seconds[p]);
    line += text;
  }
  std::snprintf(text, sizeof text, " other %.3f s; %.3f s from process start", total - named, now);
  return line + text;
}

ShutdownSpan::ShutdownSpan(ShutdownPart part) : part_(part), start_s_(seconds_since_process_start()) {}

ShutdownSpan::~ShutdownSpan() { add_shutdown_seconds(part_, seconds_since_process_start() - start_s_); }

}  // namespace sb
