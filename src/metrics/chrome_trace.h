// A per-rank timeline in the Chrome trace-event JSON format (chrome://tracing, ui.perfetto.dev): one
// "complete" event per phase of each step, one per gradient bucket's all-reduce (metrics/step_trace.h),
// and one per epoch, on named tracks. Each rank writes its own file; open several in Perfetto to compare
// ranks.
#pragma once
#include <cstdio>
#include <string>

namespace sb {

// The trace file of `rank` in `directory`: DIRECTORY/trace-rank<R>.json.
std::string trace_path(const std::string& directory, int rank);

// Throws a UserError naming the file when this rank cannot write its trace file (it is created empty);
// run before any work, so that a missing node-local folder costs nothing.
void check_trace_writable(const std::string& directory, int rank);

class ChromeTrace {
 public:
  // Creates `path` (UserError naming it when it cannot be written). pid is the rank.
  ChromeTrace(const std::string& path, int rank);
  ~ChromeTrace();  // closes the JSON array, so the file is valid
  ChromeTrace(const ChromeTrace&) = delete;
  ChromeTrace& operator=(const ChromeTrace&) = delete;

  // Names track `track` (a "thread" of the rank's process).
  void name_track(int track, const char* name);
  // A span of `duration_us` starting at `start_us` (microseconds on the run's clock) on track `track`.
  void complete(const char* name, const char* category, double start_us, double duration_us, int track,
                const std::string& args_json = "");

 private:
  std::FILE* file_ = nullptr;
  int rank_;
  bool first_ = true;
};

}  // namespace sb
