#include "cli/command_setup.h"

#include <cstdio>
#include <filesystem>

#include "cli/device_resolution.h"
#include "cli/output_locks.h"
#include "comm/collective_watchdog.h"
#include "comm/config_check.h"
#include "comm/root_check.h"
#include "core/error.h"
#include "metrics/chrome_trace.h"
#include "metrics/results_output_check.h"
#include "train/collective.h"

namespace sb {
namespace {

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  return std::filesystem::equivalent(a, b, error);
}

// Rank 0, after the locks (so that a live run's file is reported as in use, not as finished).
void refuse_existing_outputs(const CommandOutputs& outputs, const std::string& resume) {
  const bool resuming = !resume.empty();
  const bool trains = !outputs.checkpoint.empty();
  if (!resuming && path_exists(outputs.out)) {
    const bool resumable = trains && path_exists(outputs.checkpoint);
    throw UserError("--out " + outputs.out + " already exists, and scalebench never replaces a results file: " +
                    (resumable ? "continue its run with --resume " + outputs.checkpoint + ", " : std::string()) +
                    "choose another --out, or remove the file first to replace it");
  }
  // A resume of something that is no checkpoint file (missing, a directory) is refused by its own check,
  // which names it.
  std::error_code error;
  const bool resumed = resuming && (!std::filesystem::is_regular_file(resume, error) || same_file(resume, outputs.checkpoint));
  if (trains && !resumed && path_exists(outputs.checkpoint)) {
    throw UserError("the checkpoint file " + outputs.checkpoint + " (--checkpoint) already exists, and scalebench replaces only "
                    "the checkpoint it resumes: continue its run with --resume " + outputs.checkpoint +
                    ", choose another --checkpoint, or remove the file first to start over");
  }
}

}  // namespace

bool path_exists(const std::string& path) {
  std::error_code error;  // a dangling link counts: writing through it would create its target
  return !path.empty() && std::filesystem::exists(std::filesystem::symlink_status(path, error));
}

std::optional<CliConfig> parse_command(MpiSession& session, const char* command, unsigned mask, const char* summary,
                                       const std::vector<std::string>& args, const std::string& command_line) {
  CliConfig cli;
  run_collectively(session.world(), [&] { cli = parse_options(command, mask, args); });
  if (cli.help) {
    if (session.rank() == 0) std::fputs(help_text(command, mask, summary).c_str(), stdout);
    return std::nullopt;
  }
  cli.train.command_line = command_line;
  resolve_device_on_ranks(session, cli.train, mask == kComm ? "# " : "");
  return cli;
}

void agree_on_configuration(Communicator& world, const std::string& config_text, double collective_timeout) {
  check_same_on_all_ranks(world, config_text);
  set_collective_timeout(collective_timeout);
}

std::vector<std::unique_ptr<OutputLock>> prepare_outputs(Communicator& world, const CommandOutputs& outputs,
                                                         const std::string& resume) {
  if (!outputs.out.empty()) check_on_root(world, 0, [&] { check_output_writable(outputs.out); });
  if (!outputs.checkpoint.empty()) {
    check_on_root(world, 0, [&] { check_output_writable(outputs.checkpoint, "the checkpoint file (--checkpoint)"); });
  }
  auto locks = lock_outputs(world, outputs.out, outputs.checkpoint_option);
  check_on_root(world, 0, [&] { refuse_existing_outputs(outputs, resume); });
  if (!outputs.trace.empty()) run_collectively(world, [&] { check_trace_writable(outputs.trace, world.rank()); });
  return locks;
}

}  // namespace sb
