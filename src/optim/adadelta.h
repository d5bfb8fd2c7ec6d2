// Adadelta (Zeiler 2012) with L2 weight decay: torch.optim.Adadelta's semantics.
#pragma once
#include <vector>

#include "optim/optim_config.h"
#include "optim/optimizer.h"

namespace sb {

class Adadelta final : public Optimizer {
 public:
  // Throws UserError for out-of-range values.
  Adadelta(int64_t n, const AdadeltaConfig& config);
  const char* name() const override { return "adadelta"; }
  // {"square_avg", "acc_delta"}.
  std::vector<NamedState> state() override;
  const AdadeltaConfig& config() const { return config_; }

 protected:
  void update(float* params, const float* grads, double lr, int64_t step) override;

 private:
  AdadeltaConfig config_;
  std::vector<float> square_avg_;  // running average of squared gradients
  std::vector<float> acc_delta_;   // running average of squared updates
};

}  // namespace sb
