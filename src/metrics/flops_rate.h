// The model FLOP rate of training and its utilisation of the devices (MFU), as the train summary and
// analysis/report.py state them: model FLOPs per training sample (3 x forward) times the throughput,
// against the measured peak of every device together.
#pragma once

namespace sb {

struct FlopsRate {
  double achieved_tflops = 0;  // all devices together
  double mfu = 0;              // fraction of peak_tflops_per_device x devices; NaN where the peak is unknown
};

FlopsRate flops_rate(double flops_per_sample, double images_per_s, double peak_tflops_per_device, int devices);

}  // namespace sb
