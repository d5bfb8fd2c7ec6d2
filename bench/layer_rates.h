// What the CPU and CUDA layer benchmarks report alike: images/s, and the training FLOP/s of a layer
// (3 x forward: forward, input gradient, weight gradient; the convention of src/nn/flops.h).
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>

namespace sb::bench {

// Forward FLOPs of a k x k convolution over a batch: 2 per multiply-add.
inline double conv_flops(int64_t n, int64_t cin, int64_t cout, int64_t k, int64_t hout, int64_t wout) {
  return 2.0 * static_cast<double>(n * cout * hout * wout * cin * k * k);
}

// items/s counts the batch's images; FLOP/s is added where forward_flops > 0.
inline void report_layer_rates(benchmark::State& state, int64_t batch, double forward_flops) {
  state.SetItemsProcessed(state.iterations() * batch);
  if (forward_flops > 0)
    state.counters["FLOP/s"] = benchmark::Counter(3.0 * forward_flops, benchmark::Counter::kIsIterationInvariantRate,
                                                  benchmark::Counter::OneK::kIs1000);
}

}  // namespace sb::bench
