// Mixed-precision support on the device, so that fp16 dynamic loss scaling needs no host sync:
// torch.cuda.amp.GradScaler's semantics (init scale 2^16, growth factor 2, backoff 0.5, growth interval
// 2000). The loss kernels multiply the gradient by *scale; the optimizer (kernels/optimizer.h) divides it
// out and skips the step when *found_inf is set; update_loss_scale then adjusts the scale and clears the
// flag for the next step.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// Device-resident loss-scaler state. Initialise to {65536.0f, 0, 0}.
struct LossScaleState {
  float scale;
  int32_t growth_tracker;  // consecutive steps without inf/NaN
  int32_t found_inf;       // set by check_finite / unscale_and_check, cleared by update_loss_scale
};

// Sets *found_inf = 1 when any of the n elements of x is inf or NaN; never clears it.
void check_finite(const void* x, int64_t n, DType dtype, int32_t* found_inf, cudaStream_t stream);

// grads *= 1 / *scale in place (the reciprocal taken in double then rounded to fp32, as torch does), and
// sets *found_inf = 1 when any gradient was inf or NaN. For callers that want unscaled gradients in memory
// (e.g. gradient clipping); the fused optimizer can unscale on the fly instead.
void unscale_and_check(float* grads, int64_t n, const float* scale, int32_t* found_inf, cudaStream_t stream);

// GradScaler.update(): found_inf -> scale *= backoff, tracker = 0; otherwise tracker += 1 and when it
// reaches growth_interval, scale *= growth (only if that stays finite) and tracker = 0. Then clears
// found_inf. One thread; no host sync.
void update_loss_scale(LossScaleState* state, float growth_factor, float backoff_factor, int growth_interval,
                       cudaStream_t stream);

}  // namespace sb::kernels
