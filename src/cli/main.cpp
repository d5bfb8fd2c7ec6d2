// scalebench: one SPMD program, one process per GPU (or CPU rank). See README.md.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "comm/mpi_session.h"
#include "core/cuda_work_queues.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/log.h"
#include "core/shell_quote.h"
#include "core/shutdown_clock.h"
#include "core/stop_signal.h"

namespace {
const char* kUsage =
    "usage: mpirun -np N scalebench COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  train   data-parallel training of one model, results to HDF5\n"
    "  scale   the scaling study: train on 1, 2, 4, ... of the job's ranks, speedup and efficiency\n"
    "  comm    all-reduce sweep over sizes and dtypes (MPI or NCCL): time, algbw, busbw, checked results\n"
    "  predict throughput, efficiency and exposed communication at unmeasured GPU counts, from a study and a sweep\n"
    "  info    versions, ranks, hosts and devices\n"
    "  pack    an image folder (train/CLASS/*, val/CLASS/*) into WebDataset tar shards, on one process\n"
    "  io      the input pipeline of image files alone: img/s and busy cores per --workers and decoder\n"
    "\n"
    "scalebench COMMAND --help lists the options of a command.\n";

// An error this rank met alone. In a one-process job it is the whole job: the sentence, then main
// finalizes MPI and exits with the code, without MPI_Abort and the launcher's banner after it. With
// more ranks the others may wait in a collective, so the job is aborted.
int end_after_error(const sb::MpiSession& session, const std::string& message, int exit_code) {
  if (session.size() > 1) sb::abort_job_after_error(message, exit_code);
  sb::print_error(sb::without_rank_prefix(message, 0));
  return exit_code;
}

// Runs the command and turns what reaches the top into the exit code (or aborts the job).
int run_command(sb::MpiSession& session, const std::string& command, const std::vector<std::string>& args,
                const std::string& command_line) {
  const bool root = session.rank() == 0;
  try {
    if (command == "train") return sb::train_command(session, args, command_line);
    if (command == "scale") return sb::scale_command(session, args, command_line);
    if (command == "comm") return sb::comm_command(session, args, command_line);
    if (command == "predict") return sb::predict_command(session, args, command_line);
    if (command == "info") return sb::info_command(session, args);
    if (command == "pack") return sb::pack_command(session, args);
    if (command == "io") return sb::io_command(session, args);
    // argv is the launcher's, the same on every rank: every rank stops here together.
    throw sb::AgreedError("unknown command '" + command + "'; valid commands: train, scale, comm, predict, info, pack, io (see scalebench --help)",
                          session.size(), root);
  } catch (const sb::AgreedError& e) {
    // Every rank of the job met the same error together (the collective checks), so rank 0 speaks and all
    // return. Agreed by part of the job only (a `scale` configuration), the others may be waiting.
    if (e.ranks() != session.size()) sb::abort_job_after_agreed_error(e, sb::kExitBadInput);
    if (e.speaker()) sb::print_error(e.what());
    return sb::kExitBadInput;
  } catch (const sb::UserError& e) {
    return end_after_error(session, e.what(), sb::kExitBadInput);
  } catch (...) {
    return end_after_error(session, sb::describe_current_exception(), sb::kExitFailure);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // First of all: a stop signal that arrives while MPI starts or data loads is remembered and honoured
  // at the next check, instead of killing the process without a word.
  sb::install_stop_handlers();
  sb::install_terminate_handler();
  sb::set_cuda_work_queues_unless_set();  // before MPI_Init, which may start CUDA
  const std::string command_line = sb::shell_command_line(std::vector<std::string>(argv, argv + argc));
  sb::MpiSession session(argc, argv);
  const bool root = session.rank() == 0;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    if (root) std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? sb::kExitBadInput : 0;
  }
  const std::string command = argv[1];
  const int code = run_command(session, command, std::vector<std::string>(argv + 2, argv + argc), command_line);
  // After a training run, its last line says what the end cost, MPI_Finalize included.
  session.finalize();
  if (root && sb::training_ended()) sb::log0("%s\n", sb::shutdown_line().c_str());
  return code;
}
