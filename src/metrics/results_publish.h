// Working files beside an output, and publishing a copy of one to the output's path.
#pragma once
#include <string>

namespace sb {
// A name beside `path` that no other run uses: PATH.SUFFIX.HOST.PID. Two runs that write the same
// output (by mistake, or a requeued job beside a live one) never share a working file. Every name handed
// out is removed if this process aborts the job (sb::fatal, a failed library call): a working file is
// never the result, and a partial one would only be left behind.
std::string unique_working_path(const std::string& path, const std::string& suffix);

// The name unique_working_path gives in the process `pid` on `host`; the lock takeover uses it to remove
// the working files of a run that died.
std::string working_path_of(const std::string& path, const std::string& suffix, const std::string& host, long long pid);

// Replaces `to` with a copy of `from`: copies to a unique staging file beside `to`, then renames it over
// `to` (atomic: a reader sees the old or the new file, never part of one). On failure the staging file is
// removed and the job aborts with one line naming the file and the operating system's reason.
void publish_copy(const std::string& from, const std::string& to);
}  // namespace sb
