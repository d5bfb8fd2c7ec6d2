#include "metrics/chrome_trace.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace sb {

std::string trace_path(const std::string& directory, int rank) {
  return directory + "/trace-rank" + std::to_string(rank) + ".json";
}

void check_trace_writable(const std::string& directory, int rank) {
  const std::string path = trace_path(directory, rank);
  std::FILE* probe = std::fopen(path.c_str(), "w");
  if (!probe) throw UserError("--trace " + directory + ": cannot write " + path + ": " + std::strerror(errno) +
                              "; the folder must exist and be writable on every node");
  std::fclose(probe);
}

ChromeTrace::ChromeTrace(const std::string& path, int rank) : rank_(rank) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw UserError("--trace: cannot write " + path + ": " + std::strerror(errno));
  std::fprintf(file_, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  std::fprintf(file_, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}}", rank_, rank_);
  first_ = false;
}

ChromeTrace::~ChromeTrace() {
  if (!file_) return;
  std::fprintf(file_, "\n]}\n");
  std::fclose(file_);
}

void ChromeTrace::name_track(int track, const char* name) {
  std::fprintf(file_, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
               first_ ? "" : ",\n", rank_, track, name);
  first_ = false;
}

void ChromeTrace::complete(const char* name, const char* category, double start_us, double duration_us, int track,
                           const std::string& args_json) {
  std::fprintf(file_, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d%s%s}",
               first_ ? "" : ",\n", name, category, start_us, duration_us, rank_, track,
               args_json.empty() ? "" : ",\"args\":", args_json.c_str());
  first_ = false;
}

}  // namespace sb
