// SGD with momentum, dampening, Nesterov and L2 weight decay: torch.optim.SGD's semantics.
#pragma once
#include <vector>

#include "optim/optim_config.h"
#include "optim/optimizer.h"

namespace sb {

class Sgd final : public Optimizer {
 public:
  // Throws UserError for out-of-range values, or Nesterov without momentum or with dampening.
  Sgd(int64_t n, const SgdConfig& config);
  const char* name() const override { return "sgd"; }
  // {"momentum_buffer"} when momentum > 0, else nothing.
  std::vector<NamedState> state() override;
  const SgdConfig& config() const { return config_; }

 protected:
  void update(float* params, const float* grads, double lr, int64_t step) override;

 private:
  SgdConfig config_;
  std::vector<float> momentum_buffer_;  // empty when momentum == 0
};

}  // namespace sb
