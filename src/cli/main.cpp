// scalebench: one SPMD program, one process per GPU (or CPU rank). See README.md.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "comm/mpi_session.h"
#include "core/error.h"

namespace {
const char* kUsage =
    "usage: mpirun -np N scalebench COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  train   data-parallel training of one model, results to HDF5\n"
    "  scale   the scaling study: train on 1, 2, 4, ... of the job's ranks, speedup and efficiency\n"
    "  comm    all-reduce sweep over sizes and dtypes (MPI or NCCL): time, algbw, busbw, checked results\n"
    "  info    versions, ranks, hosts and devices\n"
    "\n"
    "scalebench COMMAND --help lists the options of a command.\n";

std::string join_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) line += (i ? " " : "") + std::string(argv[i]);
  return line;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string command_line = join_command_line(argc, argv);
  sb::MpiSession session(argc, argv);
  const bool root = session.rank() == 0;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    if (root) std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "train") return sb::train_command(session, args, command_line);
    if (command == "scale") return sb::scale_command(session, args, command_line);
    if (command == "comm") return sb::comm_command(session, args, command_line);
    if (command == "info") return sb::info_command(session, args);
    throw sb::UserError("unknown command '" + command + "'; valid commands: train, scale, comm, info (see scalebench --help)");
  } catch (const sb::UserError& e) {
    // Every rank reaches the same error (arguments and collective checks agree), so rank 0 speaks.
    if (root) std::fprintf(stderr, "scalebench: error: %s\n", e.what());
    return 2;
  }
}
