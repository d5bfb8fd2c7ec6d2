#include "metrics/flops_rate.h"

#include <cmath>
#include <limits>

namespace sb {

FlopsRate flops_rate(double flops_per_sample, double images_per_s, double peak_tflops_per_device, int devices) {
  FlopsRate rate;
  rate.achieved_tflops = flops_per_sample * images_per_s / 1e12;
  rate.mfu = std::isfinite(peak_tflops_per_device) && peak_tflops_per_device > 0 && devices > 0
                 ? rate.achieved_tflops / (peak_tflops_per_device * devices)
                 : std::numeric_limits<double>::quiet_NaN();
  return rate;
}

}  // namespace sb
