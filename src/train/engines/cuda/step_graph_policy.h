// When the CUDA engine captures its training step as a CUDA graph and when it replays one: host rules
// only (the CUDA calls are in step_graphs.h), so that a CPU test holds them.
#pragma once
#include <cstdint>

namespace sb::cuda {

// A capture must neither build cuDNN plans nor allocate (either fails inside it): the first full step
// builds and autotunes the plans and grows the layers' buffers, a second eager step runs with all of them
// in place, and the third is the first one captured.
inline constexpr int kEagerStepsBeforeCapture = 2;

class StepGraphPolicy {
 public:
  // enabled: --cuda-graph. full_batch: the per-rank batch of a full step; only full steps are captured
  // (an epoch's last, partial, batch runs eagerly).
  StepGraphPolicy(bool enabled, int64_t full_batch) : enabled_(enabled), full_batch_(full_batch) {}

  // Whether to capture the graphs before queueing a step of `batch` samples.
  bool should_capture(int64_t batch) const {
    return enabled_ && !failed_ && batch == full_batch_ && !has_graphs() &&
           eager_full_steps_ >= kEagerStepsBeforeCapture;
  }
  // Whether the captured graphs run a step of `batch` samples (else it is queued eagerly).
  bool replays(int64_t batch) const { return has_graphs() && batch == captured_batch_; }
  bool has_graphs() const { return captured_batch_ != 0; }

  void ran_eagerly(int64_t batch) {
    if (batch == full_batch_) ++eager_full_steps_;
  }
  void captured(int64_t batch) { captured_batch_ = batch; }
  // The runtime refused a capture: every later step runs eagerly.
  void capture_failed() {
    failed_ = true;
    captured_batch_ = 0;
  }
  // The graphs were dropped (a buffer they hold moved): the next full step captures them again, with no
  // eager steps first, since the plans exist and the buffers have grown.
  void dropped() { captured_batch_ = 0; }

 private:
  bool enabled_;
  int64_t full_batch_;
  bool failed_ = false;
  int eager_full_steps_ = 0;
  int64_t captured_batch_ = 0;  // 0: no graphs
};

}  // namespace sb::cuda
