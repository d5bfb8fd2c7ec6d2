// The opening steps every command shares: options parsed collectively, --help, the ranks' agreement on
// the configuration, the collective watchdog armed, and the outputs checked and locked.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_config.h"
#include "cli/options.h"
#include "comm/mpi_session.h"
#include "metrics/output_lock.h"

namespace sb {

// Parses the command's options on every rank together (a rank whose arguments differ stops every rank
// with one sentence). Prints --help on rank 0 and returns nothing then: the command returns 0.
std::optional<CliConfig> parse_command(MpiSession& session, const char* command, unsigned mask, const char* summary,
                                       const std::vector<std::string>& args, const std::string& command_line);

// Whether anything, a dangling link included, is at `path` ("" is nothing).
bool path_exists(const std::string& path);

// After the command's own checks: every rank holds the same configuration (`config_text`, hashed), and
// the collective watchdog waits `collective_timeout` seconds (0: forever), as every rank agreed.
void agree_on_configuration(Communicator& world, const std::string& config_text, double collective_timeout);

// What a command writes. `checkpoint` is the path checkpoints would go to ("" for none: scale, comm).
struct CommandOutputs {
  std::string out;
  std::string checkpoint;
  std::string checkpoint_option;  // --checkpoint as given ("" for the default beside --out)
  std::string trace;
};

// Collective, before any expensive work or write: rank 0 can write the results file and the checkpoint,
// every rank can write its trace file, and rank 0 holds the outputs' locks (one live run per output),
// released when the result is destroyed or the job aborts. A file already at --out, or at the checkpoint
// path, is refused with one sentence (nothing written is ever replaced), except what a resume continues:
// its --out, and the checkpoint it reads (`resume`, train --resume's checkpoint; "" for none).
std::vector<std::unique_ptr<OutputLock>> prepare_outputs(Communicator& world, const CommandOutputs& outputs,
                                                         const std::string& resume = "");

}  // namespace sb
