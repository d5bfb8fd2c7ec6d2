// The backend of a training run: it owns the model, its flat buffers, the optimizer and the data, and
// runs one data-parallel step at a time. The trainer owns the loop, the sampler, timing and results.
// CpuEngine is the reference; the CUDA engine lives in src/train/cuda/.
#pragma once
#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace sb {

enum Phase { kPhaseData = 0, kPhaseForward, kPhaseBackward, kPhaseComm, kPhaseOptimizer, kPhaseCount };
inline const char* phase_name(int p) {
  static const char* names[] = {"data", "forward", "backward", "comm", "optimizer"};
  return names[p];
}

struct PhaseTimes {
  double seconds[kPhaseCount] = {0, 0, 0, 0, 0};
  double total() const {
    double t = 0;
    for (double s : seconds) t += s;
    return t;
  }
  PhaseTimes& operator+=(const PhaseTimes& o) {
    for (int i = 0; i < kPhaseCount; ++i) seconds[i] += o.seconds[i];
    return *this;
  }
};

struct EvalTotals {
  double loss_sum = 0;  // sum over samples of the per-sample loss
  int64_t correct = 0;
  int64_t count = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string device_name() const = 0;
  virtual int64_t parameter_count() const = 0;
  virtual int64_t train_size() const = 0;
  virtual int64_t test_size() const = 0;

  // One step on this rank's samples of the global batch (training-set indices): forward, loss, backward,
  // gradient average across ranks, optimizer update with learning rate lr. `step` counts every step
  // of the run (it keys dropout). Returns this step's phase times; exposed communication goes in comm.
  virtual PhaseTimes train_step(std::span<const int64_t> indices, int epoch, int64_t step, double lr) = 0;
  // The sum of the per-sample training losses since the last call, and how many samples they cover.
  virtual EvalTotals take_train_totals() = 0;
  // Evaluates this rank's shard of the test set (test-set indices), in eval mode. Local totals only.
  virtual EvalTotals evaluate(std::span<const int64_t> indices) = 0;

  // Finishes queued device work (so that host timers are honest). A no-op on the CPU.
  virtual void synchronize() {}
  virtual double peak_memory_bytes() const { return std::numeric_limits<double>::quiet_NaN(); }
  // Energy used since the engine was created, in joules; NaN where it can't be measured.
  virtual double energy_joules() const { return std::numeric_limits<double>::quiet_NaN(); }
};

}  // namespace sb
