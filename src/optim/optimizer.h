// The optimizer interface over one flat fp32 parameter buffer and its matching gradient buffer
// (docs/architecture.md, "Flat buffers"). Each step updates the whole buffer in one pass, as the fused CUDA kernel
// does. The state buffers and the step counter are exposed by name so that the run state's checkpoint
// can save and restore them (docs/architecture.md, "One run state").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sb {

// A view of one state buffer of an optimizer: `count` floats at `data`, owned by the optimizer.
struct NamedState {
  std::string name;  // torch.optim's state key, e.g. "momentum_buffer", "exp_avg"
  float* data = nullptr;
  int64_t count = 0;
};

class Optimizer {
 public:
  // n: the number of parameters (the length of the flat buffers). State starts at zero.
  explicit Optimizer(int64_t n);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of all n parameters with learning rate lr (>= 0), then the step counter advances.
  void step(float* params, const float* grads, double lr);

  virtual const char* name() const = 0;
  // Every state buffer, in a fixed order; empty for stateless ones (SGD without momentum).
  virtual std::vector<NamedState> state() = 0;

  int64_t size() const { return n_; }
  // Steps taken so far. Saved with the state: SGD's first step and Adam's bias corrections depend on it.
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t steps);

 protected:
  // Applies the update of step number `step` (1-based: step_count() + 1) to all n elements.
  virtual void update(float* params, const float* grads, double lr, int64_t step) = 0;

  int64_t n_;

 private:
  int64_t step_count_ = 0;
};

}  // namespace sb
