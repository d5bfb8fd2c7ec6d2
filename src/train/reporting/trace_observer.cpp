#include "train/reporting/trace_observer.h"

#include <algorithm>
#include <utility>

#include "metrics/step_trace.h"
#include "train/collective.h"

namespace sb {

std::unique_ptr<TraceObserver> TraceObserver::open(const std::string& directory, Communicator& comm) {
  std::unique_ptr<ChromeTrace> trace;
  run_collectively(comm, [&] {
    if (directory.empty()) return;
    trace = std::make_unique<ChromeTrace>(trace_path(directory, comm.rank()), comm.rank());
    name_trace_tracks(*trace);
  });
  if (!trace) return nullptr;
  return std::unique_ptr<TraceObserver>(new TraceObserver(std::move(trace)));
}

void TraceObserver::on_run_start(const RunStart& e) {
  run_start_ = e.start;
  run_start_s_ = std::chrono::duration<double>(e.start.time_since_epoch()).count();
}

void TraceObserver::on_resume_point(const ResumePoint& e) {
  epoch_start_us_ = std::chrono::duration<double, std::micro>(e.epoch_start - run_start_).count();
  cursor_us_ = std::max(cursor_us_, epoch_start_us_);
}

void TraceObserver::on_step_times(const PhaseTimes& t) {
  if (t.timeline.on_device()) {
    trace_device_step(*trace_, t.timeline, t.seconds, (t.timeline.start_s - run_start_s_) * 1e6);
  } else {
    cursor_us_ = trace_host_step(*trace_, t.seconds, cursor_us_);
  }
}

void TraceObserver::on_epoch_end(const EpochSummary& s) {
  trace_->complete("train epoch", "epoch", epoch_start_us_, epoch_wall_s_ * 1e6, kTrackEpochs,
                   "{\"epoch\":" + std::to_string(s.epoch + 1) + "}");
  trace_->complete("evaluate", "epoch", epoch_start_us_ + epoch_wall_s_ * 1e6, s.eval_seconds * 1e6, kTrackEpochs);
}

}  // namespace sb
