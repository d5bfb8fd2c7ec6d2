// Adam (Kingma & Ba) and AdamW (Loshchilov & Hutter, decoupled weight decay), with optional AMSGrad:
// torch.optim.Adam / AdamW semantics, bias-corrected.
#pragma once
#include <vector>

#include "optim/optim_config.h"
#include "optim/optimizer.h"

namespace sb {

class Adam final : public Optimizer {
 public:
  // AdamW when config.decoupled_weight_decay (see adamw_config()). Throws UserError for out-of-range values.
  Adam(int64_t n, const AdamConfig& config);
  const char* name() const override { return config_.decoupled_weight_decay ? "adamw" : "adam"; }
  // {"exp_avg", "exp_avg_sq"}, plus "max_exp_avg_sq" with AMSGrad.
  std::vector<NamedState> state() override;
  const AdamConfig& config() const { return config_; }

 protected:
  void update(float* params, const float* grads, double lr, int64_t step) override;

 private:
  AdamConfig config_;
  std::vector<float> exp_avg_;         // first moment
  std::vector<float> exp_avg_sq_;      // second moment
  std::vector<float> max_exp_avg_sq_;  // AMSGrad only
};

}  // namespace sb
