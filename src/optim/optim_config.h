// Hyper-parameters of each optimizer, as plain structs with torch.optim's defaults. Plain C++17 with no
// library types, so that the CUDA kernels can include this header too.
#pragma once

namespace sb {

// torch.optim.SGD. Nesterov needs momentum > 0 and dampening == 0.
struct SgdConfig {
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;  // L2: added to the gradient as weight_decay * param
};

// torch.optim.Adadelta (its default learning rate is 1.0; see default_learning_rate).
struct AdadeltaConfig {
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0.0;  // L2: added to the gradient
};

// torch.optim.Adam, and torch.optim.AdamW when decoupled_weight_decay is set.
struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;           // Adam: L2 on the gradient; AdamW: param *= 1 - lr * weight_decay
  bool decoupled_weight_decay = false;  // true: AdamW (Loshchilov & Hutter)
  bool amsgrad = false;                 // keep the running maximum of the second moment
};

// AdamW's torch defaults: Adam's, with decoupled weight decay 1e-2.
inline AdamConfig adamw_config() {
  AdamConfig c;
  c.weight_decay = 1e-2;
  c.decoupled_weight_decay = true;
  return c;
}

}  // namespace sb
