// Is an output path (--out, --checkpoint) usable? Asked before any expensive work, so that a typo costs
// seconds, not a run.
#pragma once
#include <string>

namespace sb {

// Throws sb::UserError naming `what` (e.g. "the checkpoint file (--checkpoint)"), `path` and the reason
// when the file cannot be written there: the directory is missing or not a directory, the path is a
// directory, or the directory or existing file is not writable (read-only file system, permissions).
// Leaves nothing behind: it probes with a temporary file that it removes, and never opens an existing
// file for writing in a way that changes it.
void check_output_writable(const std::string& path, const std::string& what = "the results file");

}  // namespace sb
