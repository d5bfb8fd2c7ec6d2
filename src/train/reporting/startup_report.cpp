#include "train/reporting/startup_report.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/startup_clock.h"

namespace sb {

namespace {

constexpr double kUnmeasured = std::numeric_limits<double>::quiet_NaN();

// MPI's maximum is undefined for NaN: unmeasured travels as -infinity, below any rank's time.
constexpr double kUnmeasuredOnTheWire = -std::numeric_limits<double>::infinity();
double to_wire(double seconds) { return std::isnan(seconds) ? kUnmeasuredOnTheWire : seconds; }
double from_wire(double value) { return value == kUnmeasuredOnTheWire ? kUnmeasured : value; }

constexpr StartupPart kEngineParts[] = {StartupPart::cuda_context, StartupPart::network, StartupPart::nccl,
                                       StartupPart::upload, StartupPart::peak_gemm};

double engine_parts_seconds() {
  double sum = 0;
  for (StartupPart part : kEngineParts)
    if (const double s = startup_seconds(part); std::isfinite(s)) sum += s;
  return sum;
}

}  // namespace

EngineBuildTimer::EngineBuildTimer() : parts_before_(engine_parts_seconds()), start_(StartupClock::now()) {}

EngineBuildTimer::~EngineBuildTimer() {
  const double total = std::chrono::duration<double>(StartupClock::now() - start_).count();
  add_startup_seconds(StartupPart::engine_other, total - (engine_parts_seconds() - parts_before_));
}

StartupSnapshot startup_snapshot() {
  StartupSnapshot snapshot;
  for (size_t p = 0; p < startup_part_count(); ++p) snapshot.seconds.push_back(startup_seconds(static_cast<StartupPart>(p)));
  return snapshot;
}

namespace {

// Each part's seconds since `since` (from process start without one), the slowest rank's.
StartupReport gather(Communicator& comm, const StartupSnapshot* since) {
  const size_t n = startup_part_count();
  const StartupPartInfo* parts = startup_parts();
  std::vector<double> mine(n + 1);
  // The first step and the remainder before it belong to the process's start-up alone.
  const double to_first_step = since ? kUnmeasured : seconds_to_first_step();
  double named = 0;
  for (size_t p = 0; p < n; ++p) {
    const double now = startup_seconds(static_cast<StartupPart>(p));
    const double before = since && p < since->seconds.size() ? since->seconds[p] : kUnmeasured;
    double s = std::isnan(before) ? now : now != before ? now - before : kUnmeasured;
    if (since && static_cast<StartupPart>(p) == StartupPart::first_step) s = kUnmeasured;
    mine[p] = s;
    if (parts[p].kind == StartupPartKind::BeforeFirstStep && std::isfinite(s)) named += s;
  }
  for (size_t p = 0; p < n; ++p)
    if (parts[p].kind == StartupPartKind::Remainder) mine[p] = std::isfinite(to_first_step) ? to_first_step - named : kUnmeasured;
  mine[n] = to_first_step;
  for (double& v : mine) v = to_wire(v);
  comm.allreduce_max(std::span<double>(mine));
  StartupReport report;
  for (size_t p = 0; p < n; ++p) report.seconds.push_back(from_wire(mine[p]));
  report.to_first_step = from_wire(mine[n]);
  return report;
}

}  // namespace

StartupReport gather_startup(Communicator& comm) { return gather(comm, nullptr); }

StartupReport gather_startup_since(Communicator& comm, const StartupSnapshot& since) { return gather(comm, &since); }

std::string startup_line(const StartupReport& report) {
  char text[96];
  std::snprintf(text, sizeof text, "startup: %.3f s from process start to the end of the first step (slowest rank per part):",
                report.to_first_step);
  std::string line = text, later;
  const StartupPartInfo* parts = startup_parts();
  bool first = true;
  for (size_t p = 0; p < report.seconds.size(); ++p) {
    if (std::isnan(report.seconds[p])) continue;
    std::snprintf(text, sizeof text, " %s %.3f s", parts[p].name, report.seconds[p]);
    if (parts[p].kind == StartupPartKind::AfterFirstStep) {
      later += later.empty() ? "; after it:" : ",";
      later += text;
    } else {
      if (!first) line += ",";
      line += text;
      first = false;
    }
  }
  return line + later;
}

std::string startup_attribute_name(size_t part) { return std::string("startup_") + startup_parts()[part].name + "_s"; }

std::vector<NamedValue> startup_attributes(const StartupReport& report) {
  std::vector<NamedValue> values;
  for (size_t p = 0; p < report.seconds.size(); ++p) values.push_back({startup_attribute_name(p), report.seconds[p]});
  values.push_back({"startup_to_first_step_s", report.to_first_step});
  return values;
}

void write_startup_attributes(RunWriter& run, const StartupReport& report) { run.write_attributes(startup_attributes(report)); }

}  // namespace sb
