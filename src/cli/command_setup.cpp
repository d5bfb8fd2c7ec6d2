#include "cli/command_setup.h"

#include <cstdio>

#include "cli/device_resolution.h"
#include "cli/output_locks.h"
#include "comm/collective_watchdog.h"
#include "comm/config_check.h"
#include "comm/root_check.h"
#include "core/dev_switches.h"
#include "core/log.h"
#include "metrics/chrome_trace.h"
#include "metrics/results_output_check.h"
#include "train/collective.h"

namespace sb {

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
  // The developer switches (core/dev_switches.h): a bad value stops every rank here, ranks that differ
  // too, and a switched path is said once.
  std::string switched;
  run_collectively(session.world(), [&] { switched = describe_changed(dev_switches()); });
  check_same_on_all_ranks(session.world(), switched);
  if (!switched.empty() && cli.train.device == Device::Cuda)
    log0("%sdeveloper switches: %s (docs/kernels.md)\n", mask == kComm ? "# " : "", switched.c_str());
  return cli;
}

void agree_on_configuration(Communicator& world, const std::string& config_text, double collective_timeout) {
  check_same_on_all_ranks(world, config_text);
  set_collective_timeout(collective_timeout);
}

std::vector<std::unique_ptr<OutputLock>> prepare_outputs(Communicator& world, const CommandOutputs& outputs) {
  if (!outputs.out.empty()) check_on_root(world, 0, [&] { check_output_writable(outputs.out); });
  if (!outputs.checkpoint.empty()) {
    check_on_root(world, 0, [&] { check_output_writable(outputs.checkpoint, "the checkpoint file (--checkpoint)"); });
  }
  auto locks = lock_outputs(world, outputs.out, outputs.checkpoint_option);
  if (!outputs.trace.empty()) run_collectively(world, [&] { check_trace_writable(outputs.trace, world.rank()); });
  return locks;
}

}  // namespace sb
