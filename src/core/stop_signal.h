// SIGTERM, SIGUSR1 (Slurm's --signal, time limits, preemption) and SIGINT ask the run to stop at the end
// of the current step: the trainer agrees on it across ranks, writes a checkpoint and its results, and
// the program exits with kExitInterrupted (core/exit_codes.h).
#pragma once

namespace sb {
void install_stop_handlers();
int stop_signal_received();  // the signal number, or 0
}  // namespace sb
