// When the process started, and the seconds each start-up part took on this rank. It lives in sb_core so
// that every library can time its own part (the MPI session, the engines); train/reporting/startup_report.h
// reduces the parts over the ranks, prints the `startup:` line and stores them in the results file.
#pragma once
#include <chrono>
#include <cstddef>

namespace sb {

// How a part enters the `startup:` line: timed before the first step ends (the parts of the total), the
// remainder of the total that no part names, or timed after the first step (not part of the total).
enum class StartupPartKind { BeforeFirstStep, Remainder, AfterFirstStep };

// The start-up parts in the order they happen: X(name, kind, what it covers). The `startup:` line, the
// `startup_<name>_s` attributes of `train` files and their documentation all follow this one list.
#define SB_STARTUP_PARTS(X)                                                                                         \
  X(launch, BeforeFirstStep, "from process start to MPI_Init: creating the process, loading the program and its libraries") \
  X(mpi, BeforeFirstStep, "MPI_Init and the session's node layout")                                                 \
  X(setup, BeforeFirstStep, "the command's options and checks before the data: agreement, output locks, resume checks") \
  X(data, BeforeFirstStep, "reading and decoding the data set files, or reading the decoded-data cache")            \
  X(cuda_context, BeforeFirstStep, "creating the CUDA context of the rank's GPU (CUDA): `train` starts it beside the reading of the data and counts what is left of it after") \
  X(network, BeforeFirstStep, "building the network: layers, parameters and their initial values")                 \
  X(nccl, BeforeFirstStep, "creating the NCCL communicator (CUDA, more than one rank; one rank has none)")          \
  X(upload, BeforeFirstStep, "copying the data set to the GPU (CUDA, --input device)")                              \
  X(peak_gemm, BeforeFirstStep, "measuring the GPU's peak GEMM rate that MFU is relative to, or reading it from the peak-rate cache (CUDA)") \
  X(engine_other, BeforeFirstStep, "the rest of the engine's construction")                                         \
  X(warm_up, BeforeFirstStep, "the untimed initialisation before the training clock (--untimed-init; the part keeps the option's former name): one evaluation batch and the steps that build the plans, grow the buffers and capture the CUDA graphs, then the model restored") \
  X(first_step, BeforeFirstStep, "the first timed training step; without --untimed-init it builds the cuDNN plans (CUDA) or reads them from the plan cache") \
  X(other, Remainder, "the rest of the time to the first step's end: the results file, the trainer's set-up")      \
  X(graph_capture, AfterFirstStep, "capturing the step's CUDA graphs, every capture of the run; the first lies inside warm_up, or after the first step without --untimed-init (CUDA)")

#define SB_STARTUP_PART_ENUM(name, kind, what) name,
enum class StartupPart { SB_STARTUP_PARTS(SB_STARTUP_PART_ENUM) };
#undef SB_STARTUP_PART_ENUM

struct StartupPartInfo {
  const char* name;
  StartupPartKind kind;
  const char* what;
};
// The parts' names, kinds and descriptions, indexed by StartupPart.
const StartupPartInfo* startup_parts();
size_t startup_part_count();

using StartupClock = std::chrono::steady_clock;

// The process's start: on Linux the kernel's record of it (/proc/self/stat), so that creating the process
// and loading its libraries count; elsewhere, or when that can't be read, the program's static
// initialisation, just before main().
StartupClock::time_point process_start();
const char* process_start_source();  // "/proc/self/stat" or "static initialisation"
double seconds_since_process_start();

// Adds seconds to a part of this rank (the parts start unmeasured: NaN). Thread-safe.
void add_startup_seconds(StartupPart part, double seconds);
double startup_seconds(StartupPart part);  // NaN when never timed
// Seconds from process start to the end of the process's first training step; NaN before it.
double seconds_to_first_step();
// Marks the end of the first step (later calls change nothing).
void mark_first_step_end();
void reset_startup_times();  // for tests

// Times one part from construction to stop() or destruction.
class StartupSpan {
 public:
  explicit StartupSpan(StartupPart part) : part_(part), start_(StartupClock::now()) {}
  ~StartupSpan() { stop(); }
  StartupSpan(const StartupSpan&) = delete;
  StartupSpan& operator=(const StartupSpan&) = delete;
  void stop();

 private:
  StartupPart part_;
  StartupClock::time_point start_;
  bool stopped_ = false;
};

// Times the process's first training step (part first_step) and marks its end; a no-op after it.
class FirstStepTimer {
 public:
  FirstStepTimer();
  ~FirstStepTimer();
  FirstStepTimer(const FirstStepTimer&) = delete;
  FirstStepTimer& operator=(const FirstStepTimer&) = delete;

 private:
  bool first_;
  StartupClock::time_point start_;
};

}  // namespace sb
