// What a `train` run spends after its last epoch, on this rank: the parts between the end of training
// and the end of MPI, timed where they happen (train_command, MpiSession), and the `shutdown:` line that
// rank 0 prints last, on the same clock as the start-up's (core/startup_clock.h).
#pragma once
#include <string>

namespace sb {

// The shutdown parts in the order they happen: X(name, what it covers). The `shutdown:` line, the
// results file's `shutdown_engine_s` and their documentation follow this one list; the remainder,
// `other`, is the time from the end of training to the line that no part names.
#define SB_SHUTDOWN_PARTS(X)                                                                                      \
  X(engine, "tearing down the engine: its queued device work, the NCCL communicator, the cuDNN and cuBLAS handles, device and pinned memory") \
  X(results, "writing the run's last attributes and closing the results file (rank 0)")                        \
  X(mpi_finalize, "MPI_Finalize")

#define SB_SHUTDOWN_PART_ENUM(name, what) name,
enum class ShutdownPart { SB_SHUTDOWN_PARTS(SB_SHUTDOWN_PART_ENUM) };
#undef SB_SHUTDOWN_PART_ENUM

struct ShutdownPartInfo {
  const char* name;
  const char* what;
};
// The parts' names and descriptions, indexed by ShutdownPart.
const ShutdownPartInfo* shutdown_parts();
size_t shutdown_part_count();

// Marks the end of training, where the shutdown starts (later calls change nothing).
void mark_training_end();
bool training_ended();
// Adds seconds to a part (the parts start unmeasured: NaN). Thread-safe.
void add_shutdown_seconds(ShutdownPart part, double seconds);
double shutdown_seconds(ShutdownPart part);  // NaN when never timed
// The results file's root attribute of a part timed before the file closes: `shutdown_<part>_s`.
std::string shutdown_attribute_name(ShutdownPart part);
void reset_shutdown_times();                 // for tests

// "shutdown: 0.182 s from the end of training to the end of MPI (rank 0): engine 0.121 s, results
// 0.004 s, mpi_finalize 0.048 s, other 0.009 s; 3.104 s from process start". Parts never timed are left
// out. Measured now: call it last. Empty before mark_training_end().
std::string shutdown_line();

// Times one part from construction to destruction.
class ShutdownSpan {
 public:
  explicit ShutdownSpan(ShutdownPart part);
  ~ShutdownSpan();
  ShutdownSpan(const ShutdownSpan&) = delete;
  ShutdownSpan& operator=(const ShutdownSpan&) = delete;

 private:
  ShutdownPart part_;
  double start_s_;
};

}  // namespace sb
