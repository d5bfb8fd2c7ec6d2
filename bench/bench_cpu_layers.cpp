// Google Benchmark micro-benchmarks of the CPU reference (docs/benchmarks.md): each layer's forward +
// backward at the models' shapes, a whole mnist-cnn step, and the optimizers over the models' parameter
// counts. items/s is images/s for layers and parameters/s for optimizers; FLOP/s counts the training
// FLOPs of a layer (3 x forward: forward, input gradient, weight gradient). Rates use wall-clock time
// (UseRealTime): BLAS runs on threads of its own, so the main thread's CPU time would overstate them.
//
//   build/bench/bench_cpu_layers --benchmark_filter=conv
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "models/mnist_cnn.h"
#include "nn/cpu/factory.h"
#include "nn/cpu/loss.h"
#include "nn/cpu/network.h"
#include "nn/spec.h"
#include "optim/adadelta.h"
#include "optim/sgd.h"

#include "layer_rates.h"

namespace {

using sb::bench::conv_flops;
using sb::bench::report_layer_rates;
using sb::Shape;
using sb::Tensor;

Tensor<float> random_tensor(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Tensor<float> t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = d(rng);
  return t;
}

// One layer with its own flat buffers, initialised as a model would be.
struct LayerUnderTest {
  std::unique_ptr<sb::cpu::Layer<float>> layer;
  std::vector<float> params, grads, buffers;

  explicit LayerUnderTest(const sb::LayerSpec& spec) : layer(sb::cpu::make_layer<float>(spec)) {
    const auto p = sb::collect_params(spec), b = sb::collect_buffers(spec);
    params.resize(static_cast<size_t>(sb::count_elements(p)));
    grads.resize(params.size());
    buffers.resize(static_cast<size_t>(sb::count_elements(b)));
    sb::initialize_flat(p, 1, params.data());
    sb::initialize_flat(b, 1, buffers.data());
    layer->bind(params.empty() ? nullptr : params.data(), grads.empty() ? nullptr : grads.data(),
                buffers.empty() ? nullptr : buffers.data());
  }
};

// Forward (train mode) + backward of one layer per iteration.
void run_layer(benchmark::State& state, const sb::LayerSpec& spec, const Shape& input, double forward_flops) {
  LayerUnderTest l(spec);
  const Tensor<float> x = random_tensor(input, 2);
  const Tensor<float> dy = random_tensor(sb::output_shape(spec, input), 3);
  for (auto _ : state) {
    benchmark::DoNotOptimize(l.layer->forward(x, sb::cpu::Mode::Train).data());
    benchmark::DoNotOptimize(l.layer->backward(dy).data());
  }
  report_layer_rates(state, input[0], forward_flops);
}

// mnist-cnn's layers at batch 64 (1x28x28).
void BM_mnist_conv1(benchmark::State& state) {
  run_layer(state, sb::conv2d("conv1", 1, 32, 3, 1, 0, true), Shape{64, 1, 28, 28}, conv_flops(64, 1, 32, 3, 26, 26));
}
void BM_mnist_conv2(benchmark::State& state) {
  run_layer(state, sb::conv2d("conv2", 32, 64, 3, 1, 0, true), Shape{64, 32, 26, 26}, conv_flops(64, 32, 64, 3, 24, 24));
}
void BM_mnist_fc1(benchmark::State& state) {
  run_layer(state, sb::linear("fc1", 9216, 128, true), Shape{64, 9216}, 2.0 * 64 * 9216 * 128);
}
void BM_mnist_maxpool(benchmark::State& state) {
  run_layer(state, sb::maxpool2d("pool", 2, 2), Shape{64, 64, 24, 24}, 0);
}

// WRN-shaped layers at small batches (the CPU is ~1000x slower than a GPU on these).
void BM_wrn_conv160_32x32(benchmark::State& state) {
  const int64_t n = state.range(0);
  run_layer(state, sb::conv2d("conv", 160, 160, 3, 1, 1, false), Shape{n, 160, 32, 32}, conv_flops(n, 160, 160, 3, 32, 32));
}
void BM_wrn_conv640_8x8(benchmark::State& state) {
  const int64_t n = state.range(0);
  run_layer(state, sb::conv2d("conv", 640, 640, 3, 1, 1, false), Shape{n, 640, 8, 8}, conv_flops(n, 640, 640, 3, 8, 8));
}
void BM_wrn_bn160_32x32(benchmark::State& state) {
  const int64_t n = state.range(0);
  run_layer(state, sb::batchnorm2d("bn", 160), Shape{n, 160, 32, 32}, 0);
}
void BM_wrn_fc(benchmark::State& state) {
  run_layer(state, sb::linear("fc", 640, 100, true), Shape{256, 640}, 2.0 * 256 * 640 * 100);
}

// A whole mnist-cnn training step without the optimizer (forward, NLL, backward) at batch 64.
void BM_mnist_cnn_step(benchmark::State& state) {
  sb::cpu::Network<float> net(sb::mnist_cnn(sb::ModelInput{}), 1);
  const Tensor<float> x = random_tensor(Shape{64, 1, 28, 28}, 2);
  std::vector<int32_t> labels(64);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 10);
  Tensor<float> grad;
  uint64_t step = 0;
  for (auto _ : state) {
    net.set_random_stream(7, step++);
    const Tensor<float>& out = net.forward(x, sb::cpu::Mode::Train);
    benchmark::DoNotOptimize(sb::cpu::nll_loss(out, labels.data(), grad));
    benchmark::DoNotOptimize(net.backward(grad).data());
  }
  state.SetItemsProcessed(state.iterations() * 64);
}

// Optimizers over the flat buffer: 1,199,882 (mnist-cnn) and 17,175,444 (wrn) parameters.
template <typename Make>
void run_optimizer(benchmark::State& state, Make make, int bytes_per_param) {
  const int64_t n = state.range(0);
  auto optimizer = make(n);
  std::vector<float> params(static_cast<size_t>(n), 0.5f), grads(static_cast<size_t>(n), 1e-3f);
  for (auto _ : state) {
    optimizer->step(params.data(), grads.data(), 1e-3);
    benchmark::DoNotOptimize(params.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * bytes_per_param);
}
void BM_sgd_momentum(benchmark::State& state) {
  sb::SgdConfig c;
  c.momentum = 0.9;
  // Reads param, grad, buffer; writes param, buffer.
  run_optimizer(state, [&](int64_t n) { return std::make_unique<sb::Sgd>(n, c); }, 5 * 4);
}
void BM_adadelta(benchmark::State& state) {
  // Reads param, grad, two states; writes param, two states.
  run_optimizer(state, [](int64_t n) { return std::make_unique<sb::Adadelta>(n, sb::AdadeltaConfig{}); }, 7 * 4);
}

constexpr int64_t kMnistParams = 1'199'882;
constexpr int64_t kWrnParams = 17'175'444;

}  // namespace

BENCHMARK(BM_mnist_conv1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mnist_conv2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mnist_fc1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mnist_maxpool)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mnist_cnn_step)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_wrn_conv160_32x32)->Arg(2)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_wrn_conv640_8x8)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_wrn_bn160_32x32)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_wrn_fc)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_sgd_momentum)->Arg(kMnistParams)->Arg(kWrnParams)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_adadelta)->Arg(kMnistParams)->Arg(kWrnParams)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
