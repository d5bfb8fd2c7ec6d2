// Google Benchmark micro-benchmarks of the CUDA layers (docs/benchmarks.md): forward + backward of each
// WRN layer shape at batch 256 in bf16 NHWC (the WRN's training configuration), whole-network
// forward + backward of wrn and mnist-cnn, the fused optimizer over the WRN's 17M parameters, each pass of
// the fused batch norm (kernels/bn_fused.h) at the WRN's three shapes with its bytes per second, the
// ResNets' stem on 3, 4 and 8 input channels, the pooled passes of the stem's batch norm, and the loss and
// the global average pool's gradient at an ImageNet step's shapes.
// Times are CUDA-event times of the GPU work (manual time); plans are built and autotuned in an untimed
// warm-up. Every benchmark skips itself, with "no CUDA device", where there is no GPU.
//
//   build/bench/bench_cuda_layers --benchmark_filter=conv
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "kernels/bn_fused.h"
#include "kernels/loss.h"
#include "kernels/optimizer.h"
#include "kernels/pool_dropout.h"
#include "kernels/pooling.h"
#include "kernels/small_conv.h"
#include "models/mnist_cnn.h"
#include "models/wide_resnet.h"
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/network.h"
#include "nn/spec.h"
#include "optim/cuda/fused_step_hyperparameters.h"

#include "device_random.h"
#include "cuda_bench.h"
#include "layer_rates.h"

namespace {

using sb::bench::conv_flops;
using sb::bench::EventTimer;
using sb::bench::have_gpu;
using sb::bench::fill_random;
using sb::bench::report_layer_rates;
using sb::DType;
using sb::Layout;
using sb::Shape;

sb::cuda::ContextOptions options(DType dtype, Layout layout) {
  sb::cuda::ContextOptions o;
  o.compute = dtype;
  o.layout = layout;
  return o;
}

// Forward (train mode) + backward of a spec (one layer or a whole model) per iteration.
void run_network(benchmark::State& state, const sb::LayerSpec& spec, const Shape& input, DType dtype, Layout layout,
                 double forward_flops) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  sb::cuda::Context ctx(options(dtype, layout));
  sb::cuda::Network net(spec, 1, ctx);
  const Shape out_shape = sb::output_shape(spec, input);
  sb::cuda::DeviceBuffer x_mem, dy_mem;
  fill_random(x_mem, input.numel(), dtype, 2);
  fill_random(dy_mem, out_shape.numel(), dtype, 3);
  // 2-d tensors ([N, F]) have no layout of their own (NCHW by convention); 4-d ones are in the context's.
  auto layout_of = [&](const Shape& s) { return s.rank() == 4 ? layout : Layout::NCHW; };
  const sb::cuda::DeviceTensor x{x_mem.data(), sb::TensorDesc{input, dtype, layout_of(input)}};
  const sb::cuda::DeviceTensor dy{dy_mem.data(), sb::TensorDesc{out_shape, dtype, layout_of(out_shape)}};
  auto step = [&] {
    net.forward(x, sb::cuda::Mode::Train);
    net.backward(dy);
  };
  for (int i = 0; i < 3; ++i) step();  // plans built and autotuned here, buffers grown
  ctx.synchronize();
  EventTimer timer(ctx.stream());
  for (auto _ : state) state.SetIterationTime(timer.seconds(step));
  report_layer_rates(state, input[0], forward_flops);
}

constexpr int64_t kBatch = 256;

// The WRN's convolutions at batch 256, bf16 NHWC (the shapes of docs/cudnn.md's tables).
void BM_conv3x3(benchmark::State& state) {
  const int64_t cin = state.range(0), cout = state.range(1), hw = state.range(2);
  run_network(state, sb::conv2d("conv", cin, cout, 3, 1, 1, false), Shape{kBatch, cin, hw, hw}, DType::BF16, Layout::NHWC,
              conv_flops(kBatch, cin, cout, 3, hw, hw));
}
void BM_conv1x1_shortcut(benchmark::State& state) {
  const int64_t cin = state.range(0), cout = state.range(1), hw = state.range(2);
  run_network(state, sb::conv2d("shortcut", cin, cout, 1, 1, 0, true), Shape{kBatch, cin, hw, hw}, DType::BF16,
              Layout::NHWC, conv_flops(kBatch, cin, cout, 1, hw, hw));
}
// The ResNets' stem as a network's first layer (forward and weight gradient, no input gradient): a 7x7
// stride-2 convolution to 64 channels at 224x224, on images of 3 channels (cuDNN pads them itself) or
// padded with zero channels to 4 or 8 (docs/decisions.md, "The stem keeps its 3 channels"). The FLOPs
// counted are those of 3 channels, the useful work, so that the rates compare. args: channels, dtype (0
// bf16, 1 fp16).
void BM_resnet_stem(benchmark::State& state) {
  const int64_t channels = state.range(0);
  const DType dtype = state.range(1) ? DType::F16 : DType::BF16;
  run_network(state, sb::sequential("", {sb::conv2d("conv1", channels, 64, 7, 2, 3, false)}),
              Shape{kBatch, channels, 224, 224}, dtype, Layout::NHWC, conv_flops(kBatch, 3, 64, 7, 112, 112));
}
// BN followed by ReLU (fused into one cuDNN graph where the context allows it).
void BM_bn_relu(benchmark::State& state) {
  const int64_t c = state.range(0), hw = state.range(1);
  run_network(state, sb::sequential("", {sb::batchnorm2d("bn", c), sb::relu("relu")}), Shape{kBatch, c, hw, hw},
              DType::BF16, Layout::NHWC, 0);
}
void BM_linear(benchmark::State& state) {
  run_network(state, sb::linear("fc", state.range(0), state.range(1), true), Shape{kBatch, state.range(0)}, DType::BF16,
              Layout::NHWC, 2.0 * kBatch * state.range(0) * state.range(1));
}

// Whole models, forward + backward (no loss, no optimizer): wrn at 256 bf16 NHWC, mnist-cnn at 64.
void BM_wrn_forward_backward(benchmark::State& state) {
  const sb::ModelInput in{3, 32, 32, 100};
  run_network(state, sb::wide_resnet(in), Shape{kBatch, 3, 32, 32}, DType::BF16, Layout::NHWC, 14.47e9 / 3.0 * kBatch);
}
void BM_mnist_cnn_forward_backward(benchmark::State& state) {
  const DType dtype = state.range(0) ? DType::BF16 : DType::F32;
  run_network(state, sb::mnist_cnn(sb::ModelInput{}), Shape{64, 1, 28, 28}, dtype, Layout::NHWC, 0);
}

// The fused optimizer: one launch over the whole flat buffer.
void BM_fused_optimizer(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  const int64_t n = state.range(1);
  const bool adadelta = state.range(0) == 1;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  sb::cuda::DeviceBuffer params, grads, s0, s1, copy;
  fill_random(params, n, DType::F32, 1);
  fill_random(grads, n, DType::F32, 2);
  for (auto* s : {&s0, &s1}) CHECK_CUDA(cudaMemset(s->ensure(static_cast<size_t>(n) * 4), 0, static_cast<size_t>(n) * 4));
  sb::kernels::FusedOptimizerArgs a;
  a.kind = adadelta ? sb::kernels::OptimizerKind::Adadelta : sb::kernels::OptimizerKind::Sgd;
  a.sgd.momentum = 0.9;
  a.adadelta = sb::fused_step_hyperparameters(sb::AdadeltaConfig{});  // torch's defaults
  a.n = n;
  a.params = static_cast<float*>(params.data());
  a.grads = static_cast<const float*>(grads.data());
  a.state[0] = static_cast<float*>(s0.data());
  a.state[1] = static_cast<float*>(s1.data());
  a.lr = adadelta ? 1.0 : 1e-3;
  a.params_copy = copy.ensure(static_cast<size_t>(n) * 2);  // bf16 working copy, as in bf16 training
  a.copy_dtype = DType::BF16;
  {
    EventTimer timer(stream);
    int64_t step = 1;
    for (auto _ : state) {
      a.step = step++;
      state.SetIterationTime(timer.seconds([&] { sb::kernels::fused_optimizer_step(a, stream); }));
    }
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
  state.SetItemsProcessed(state.iterations() * n);
}

// A non-blocking stream of the benchmark's own, destroyed with it.
class Stream {
 public:
  Stream() { CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Times `pass` per iteration after two untimed runs, and reports `bytes` per iteration.
template <typename Pass>
void time_pass(benchmark::State& state, cudaStream_t stream, int64_t bytes, Pass&& pass) {
  pass();
  pass();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EventTimer timer(stream);
  for (auto _ : state) state.SetIterationTime(timer.seconds(pass));
  state.SetBytesProcessed(state.iterations() * bytes);
}

// A batch norm's per-channel arrays on the device (gamma 1, beta 0, running mean 0, running variance 1, and
// the saved statistics, coefficients and parameter gradients), with the finalize, apply and backward
// arguments that point into them; the benchmark sets the tensors.
struct BnChannelState {
  sb::cuda::DeviceBuffer channel;
  sb::kernels::BnFinalize finalize;
  sb::kernels::BnApply apply;
  sb::kernels::BnBackward back;

  BnChannelState(int64_t c, void* workspace) {
    // gamma, beta, running mean, running var, saved mean, saved 1/std, a, b, dgamma, dbeta: [c] each.
    std::vector<float> init(static_cast<size_t>(10 * c), 0.0f);
    std::fill_n(init.begin(), c, 1.0f);          // gamma
    std::fill_n(init.begin() + 3 * c, c, 1.0f);  // running var
    float* ch = channel.ensure_as<float>(init.size());
    CHECK_CUDA(cudaMemcpy(ch, init.data(), init.size() * sizeof(float), cudaMemcpyHostToDevice));
    finalize.workspace = workspace;
    finalize.scale = ch;
    finalize.bias = ch + c;
    finalize.running_mean = ch + 2 * c;
    finalize.running_var = ch + 3 * c;
    finalize.saved_mean = ch + 4 * c;
    finalize.saved_inv_std = ch + 5 * c;
    finalize.a = ch + 6 * c;
    finalize.b = ch + 7 * c;
    apply.a = finalize.a;
    apply.b = finalize.b;
    back.a = finalize.a;
    back.b = finalize.b;
    back.scale = finalize.scale;
    back.saved_mean = finalize.saved_mean;
    back.saved_inv_std = finalize.saved_inv_std;
    back.workspace = workspace;
    back.dscale = ch + 8 * c;
    back.dbias = ch + 9 * c;
  }
};

// One pass of the fused batch norm per iteration, on a [256, c, hw, hw] bf16 NHWC activation, with the WRN's
// dropout (p = 0.3) or none, so that each pass can be compared with its traffic: bytes/s counts the
// activation-sized tensors the pass reads and writes (E each), not the small per-channel arrays or the
// dropout's keep bits (E/16), which the apply pass stores and the backward passes read, as FusedBnRun has them.
enum class BnPass { Statistics, Apply, ApplyResidual, BackwardReduce, BackwardDx };

int64_t activation_passes(BnPass pass) {
  switch (pass) {
    case BnPass::Statistics: return 1;      // reads x
    case BnPass::Apply: return 2;           // reads x, writes y
    case BnPass::ApplyResidual: return 3;   // reads x and the residual, writes y
    case BnPass::BackwardReduce: return 2;  // reads x, dy
    case BnPass::BackwardDx: return 3;      // reads x, dy, writes dx
  }
  return 0;
}

void run_bn_fused_pass(benchmark::State& state, BnPass pass) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  const int64_t c = state.range(0), hw = state.range(1);
  const double p = state.range(2) ? 0.3 : 0.0;
  const sb::kernels::BnFusedShape s{kBatch, c, hw, hw, Layout::NHWC, DType::BF16};
  const int64_t numel = kBatch * c * hw * hw;
  sb::cuda::DeviceBuffer x, y, residual, dy, dx, workspace, keep_bits;
  fill_random(x, numel, DType::BF16, 1);
  fill_random(residual, numel, DType::BF16, 2);
  fill_random(dy, numel, DType::BF16, 3);
  y.ensure(static_cast<size_t>(numel) * 2);
  dx.ensure(static_cast<size_t>(numel) * 2);
  BnChannelState state_of_channels(c, workspace.ensure(sb::kernels::bn_fused_workspace_bytes(s)));
  void* ws = state_of_channels.back.workspace;
  const Stream owned_stream;
  const cudaStream_t stream = owned_stream.get();
  sb::kernels::BnDropout dropout{p, 0x5eedull, 1};
  if (p > 0) dropout.keep_bits = keep_bits.ensure_as<uint32_t>(sb::kernels::bn_fused_mask_bytes(s) / 4);

  const sb::kernels::BnFinalize& f = state_of_channels.finalize;
  sb::kernels::BnApply& apply = state_of_channels.apply;
  apply.x = x.data();
  apply.dropout = dropout;
  apply.residual = pass == BnPass::ApplyResidual ? residual.data() : nullptr;
  apply.y = y.data();
  sb::kernels::BnBackward& back = state_of_channels.back;
  back.x = x.data();
  back.dy = dy.data();
  back.dropout = dropout;
  back.dx = dx.data();
  // The forward's statistics and the backward's sums first, so every pass sees the values it would in a step.
  auto statistics = [&] {
    sb::kernels::bn_channel_statistics(s, sb::kernels::BnStatistics{x.data(), ws}, stream);
    sb::kernels::bn_finalize_statistics(s, f, stream);
  };
  statistics();
  sb::kernels::bn_apply_forward(s, apply, stream);
  sb::kernels::bn_backward_reduce(s, back, stream);
  auto body = [&] {
    switch (pass) {
      case BnPass::Statistics: statistics(); return;
      case BnPass::Apply:
      case BnPass::ApplyResidual: sb::kernels::bn_apply_forward(s, apply, stream); return;
      case BnPass::BackwardReduce: sb::kernels::bn_backward_reduce(s, back, stream); return;
      case BnPass::BackwardDx: sb::kernels::bn_backward_dx(s, back, stream); return;
    }
  };
  time_pass(state, stream, activation_passes(pass) * numel * 2, body);
}

void BM_bn_fused_statistics(benchmark::State& state) { run_bn_fused_pass(state, BnPass::Statistics); }
void BM_bn_fused_apply(benchmark::State& state) { run_bn_fused_pass(state, BnPass::Apply); }
void BM_bn_fused_apply_residual(benchmark::State& state) { run_bn_fused_pass(state, BnPass::ApplyResidual); }
void BM_bn_fused_backward_reduce(benchmark::State& state) { run_bn_fused_pass(state, BnPass::BackwardReduce); }
void BM_bn_fused_backward_dx(benchmark::State& state) { run_bn_fused_pass(state, BnPass::BackwardDx); }

// The ResNets' stem run, [BatchNorm2d, ReLU, MaxPool2d 3x3/2 pad 1], on its [256, 64, 112, 112] NHWC
// activation: one of its pooled passes per iteration (kernels::BnMaxPool). Arg: dtype (0 fp16, 1 bf16).
// Bytes/s counts what the pass reads and writes: the activation (E), the pooled tensors (E/4 each, the
// gradient or output) and the positions (E/4 bytes).
enum class StemPass { Apply, BackwardReduce, BackwardDx };

void run_bn_stem_pool_pass(benchmark::State& state, StemPass pass) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  const DType dtype = state.range(0) ? DType::BF16 : DType::F16;
  const int64_t c = 64, hw = 112;
  const sb::kernels::BnFusedShape s{kBatch, c, hw, hw, Layout::NHWC, dtype};
  const sb::kernels::BnMaxPool pool_shape{3, 2, 1, nullptr};
  const int64_t numel = kBatch * c * hw * hw;
  const int64_t pooled = kBatch * c * sb::kernels::bn_pooled_extent(hw, pool_shape) *
                         sb::kernels::bn_pooled_extent(hw, pool_shape);
  sb::cuda::DeviceBuffer x, y, dy, dx, positions, workspace;
  fill_random(x, numel, dtype, 1);
  fill_random(dy, pooled, dtype, 3);
  y.ensure(static_cast<size_t>(pooled) * 2);
  dx.ensure(static_cast<size_t>(numel) * 2);
  sb::kernels::BnMaxPool pool = pool_shape;
  pool.positions = static_cast<uint8_t*>(positions.ensure(static_cast<size_t>(pooled)));
  BnChannelState state_of_channels(c, workspace.ensure(sb::kernels::bn_fused_workspace_bytes(s)));
  void* ws = state_of_channels.back.workspace;
  const Stream owned_stream;
  const cudaStream_t stream = owned_stream.get();
  const sb::kernels::BnFinalize& f = state_of_channels.finalize;
  sb::kernels::BnApply& apply = state_of_channels.apply;
  apply.x = x.data();
  apply.y = y.data();
  sb::kernels::BnBackward& back = state_of_channels.back;
  back.x = x.data();
  back.dy = dy.data();
  back.dx = dx.data();
  back.pool = pool;
  // The statistics, the forward's positions and the backward's sums first, as a step has them.
  sb::kernels::bn_channel_statistics(s, sb::kernels::BnStatistics{x.data(), ws}, stream);
  sb::kernels::bn_finalize_statistics(s, f, stream);
  sb::kernels::bn_apply_maxpool_forward(s, apply, pool, stream);
  sb::kernels::bn_backward_reduce(s, back, stream);
  auto body = [&] {
    switch (pass) {
      case StemPass::Apply: sb::kernels::bn_apply_maxpool_forward(s, apply, pool, stream); return;
      case StemPass::BackwardReduce: sb::kernels::bn_backward_reduce(s, back, stream); return;
      case StemPass::BackwardDx: sb::kernels::bn_backward_dx(s, back, stream); return;
    }
  };
  // apply: x, y and positions; reduce: x, dy and positions; dx: those and dx.
  const int64_t bytes = pass == StemPass::BackwardDx ? 2 * numel * 2 + pooled * 3 : numel * 2 + pooled * 3;
  time_pass(state, stream, bytes, body);
}

void BM_bn_stem_pool_apply(benchmark::State& state) { run_bn_stem_pool_pass(state, StemPass::Apply); }
void BM_bn_stem_pool_backward_reduce(benchmark::State& state) {
  run_bn_stem_pool_pass(state, StemPass::BackwardReduce);
}
void BM_bn_stem_pool_backward_dx(benchmark::State& state) { run_bn_stem_pool_pass(state, StemPass::BackwardDx); }

// The ends of an ImageNet ResNet's step in fp16 at batch 256, both on its critical path: the loss and its
// gradient over 256 x C logits (arg: C, 1,000 for ImageNet), and the global average pool's gradient,
// [256, 2048] to [256, 7, 7, 2048] NHWC as in ResNet-50. Bytes/s counts what each pass reads and writes.
void BM_softmax_cross_entropy(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  const int64_t c = state.range(0);
  sb::cuda::DeviceBuffer logits, dlogits, labels, loss;
  fill_random(logits, kBatch * c, DType::F16, 5);
  dlogits.ensure(static_cast<size_t>(kBatch * c) * 2);
  std::vector<int32_t> host_labels(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) host_labels[i] = static_cast<int32_t>((i * 37) % c);
  CHECK_CUDA(cudaMemcpy(labels.ensure(kBatch * sizeof(int32_t)), host_labels.data(), kBatch * sizeof(int32_t),
                        cudaMemcpyHostToDevice));
  float* loss_out = static_cast<float*>(loss.ensure(sizeof(float)));
  const Stream stream;
  time_pass(state, stream.get(), kBatch * c * 2 * 2, [&] {
    sb::kernels::softmax_cross_entropy(logits.data(), static_cast<const int32_t*>(labels.data()), dlogits.data(),
                                       kBatch, c, DType::F16, 1.0f, nullptr, loss_out, nullptr, stream.get());
  });
}

void BM_global_avgpool_backward(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  const int64_t c = 2048, hw = 7;
  sb::cuda::DeviceBuffer dy, dx;
  fill_random(dy, kBatch * c, DType::F16, 6);
  dx.ensure(static_cast<size_t>(kBatch * c * hw * hw) * 2);
  const Stream stream;
  time_pass(state, stream.get(), kBatch * c * (hw * hw + 1) * 2, [&] {
    sb::kernels::global_avgpool_backward(dy.data(), dx.data(), kBatch, c, hw, hw, Layout::NHWC, DType::F16,
                                         stream.get());
  });
}

constexpr int64_t kMnistParams = 1'199'882;
constexpr int64_t kWrnParams = 17'175'444;

}  // namespace

BENCHMARK(BM_conv3x3)->Args({16, 160, 32})->Args({160, 160, 32})->Args({320, 320, 16})->Args({640, 640, 8})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_conv1x1_shortcut)->Args({16, 160, 32})->Args({160, 320, 16})->Args({320, 640, 8})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_resnet_stem)->ArgsProduct({{3, 4, 8}, {0, 1}})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_bn_relu)->Args({160, 32})->Args({320, 16})->Args({640, 8})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_linear)->Args({640, 100})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_wrn_forward_backward)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mnist_cnn_forward_backward)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
// {channels, height = width, dropout}: the WRN's three widths at batch 256.
#define SB_BN_FUSED_SHAPES ArgsProduct({{160}, {32}, {0, 1}})->ArgsProduct({{320}, {16}, {0, 1}}) \
    ->ArgsProduct({{640}, {8}, {0, 1}})->UseManualTime()->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_bn_fused_statistics)->SB_BN_FUSED_SHAPES;
BENCHMARK(BM_bn_fused_apply)->SB_BN_FUSED_SHAPES;
BENCHMARK(BM_bn_fused_apply_residual)->SB_BN_FUSED_SHAPES;
BENCHMARK(BM_bn_fused_backward_reduce)->SB_BN_FUSED_SHAPES;
BENCHMARK(BM_bn_fused_backward_dx)->SB_BN_FUSED_SHAPES;
BENCHMARK(BM_bn_stem_pool_apply)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_bn_stem_pool_backward_reduce)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_bn_stem_pool_backward_dx)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_softmax_cross_entropy)->Arg(100)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_global_avgpool_backward)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_fused_optimizer)->ArgsProduct({{0, 1}, {kMnistParams, kWrnParams}})->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// ---- The small-network kernels at mnist-cnn's shapes (batch 64), and the wrn's stem ----
// conv1 + ReLU (1 -> 32 channels, 28x28 -> 26x26) and conv2's bias + ReLU + pool + dropout + flatten
// (64 channels, 24x24 -> 12x12, p = 0.25), each pass alone; args: dtype (0 fp32, 1 bf16), layout (0 NCHW,
// 1 NHWC), and for the first convolution the model (0 mnist-cnn's conv1, 1 the wrn's stem at batch 256). Bytes processed: the tensors each pass reads and writes once. fc1's GEMM (64 x 9216 by 9216 x 128)
// in fp32 and TF32: args: TF32 (0 or 1).
//
//   build/bench/bench_cuda_layers --benchmark_filter='first_conv|pool_dropout|mnist_fc1'
namespace {
namespace small_net {

constexpr int64_t kMnistBatch = 64;

DType dtype_arg(benchmark::State& state) { return state.range(0) ? DType::BF16 : DType::F32; }
Layout layout_arg(benchmark::State& state) { return state.range(1) ? Layout::NHWC : Layout::NCHW; }

// The first convolution of range(2): 0 is mnist-cnn's conv1 (1 -> 32 channels, bias and ReLU, batch 64),
// 1 the wrn's stem (3 -> 16 channels at 32x32, batch 256, no bias, batch norm after it).
struct FirstConvCase {
  sb::kernels::FirstConvShape shape;
  sb::kernels::FirstConvOptions options;
};
FirstConvCase first_conv_case(benchmark::State& state, Layout layout) {
  FirstConvCase c;
  sb::kernels::FirstConvShape& s = c.shape;
  if (state.range(2) == 0) {
    s.n = kMnistBatch;
    s.h = s.w = 28;
    s.k = 32;
    s.p = s.q = 26;
  } else {
    s.n = 256;
    s.c = 3;
    s.h = s.w = s.p = s.q = 32;
    s.k = 16;
    s.pad = 1;
    c.options.bias = c.options.relu = false;
  }
  c.options.filters_krsc = layout == Layout::NHWC;
  return c;
}

struct FirstConvBuffers {
  sb::cuda::DeviceBuffer x, w, bias, y, dy, grads, workspace;
};

FirstConvBuffers first_conv_buffers(const FirstConvCase& c, DType dtype) {
  const sb::kernels::FirstConvShape& s = c.shape;
  FirstConvBuffers b;
  fill_random(b.x, s.n * s.c * s.h * s.w, dtype, 11);
  fill_random(b.w, s.k * s.c * sb::kernels::kFirstConvTaps, dtype, 12);
  fill_random(b.bias, s.k, DType::F32, 13);
  fill_random(b.y, s.n * s.k * s.p * s.q, dtype, 14);
  fill_random(b.dy, s.n * s.k * s.p * s.q, dtype, 15);
  b.grads.ensure(static_cast<size_t>(sb::kernels::first_conv_gradient_count(s, c.options)) * 4);
  b.workspace.ensure(static_cast<size_t>(sb::kernels::first_conv_backward_workspace(s, c.options)) * 4);
  return b;
}

// A benchmark's first-convolution case, its dtype and layout, and its buffers on GPU 0.
struct FirstConvRun {
  DType dtype;
  Layout layout;
  FirstConvCase c;
  FirstConvBuffers b;

  void forward(cudaStream_t stream) {
    sb::kernels::first_conv_forward(b.x.data(), b.w.data(), static_cast<const float*>(b.bias.data()), b.y.data(),
                                    c.shape, c.options, layout, dtype, stream);
  }
};

FirstConvRun first_conv_run(benchmark::State& state) {
  CHECK_CUDA(cudaSetDevice(0));
  const DType dtype = dtype_arg(state);
  const Layout layout = layout_arg(state);
  FirstConvCase c = first_conv_case(state, layout);
  FirstConvBuffers b = first_conv_buffers(c, dtype);
  return FirstConvRun{dtype, layout, std::move(c), std::move(b)};
}

void BM_first_conv_forward(benchmark::State& state) {
  if (!have_gpu(state)) return;
  FirstConvRun r = first_conv_run(state);
  const sb::kernels::FirstConvShape& s = r.c.shape;
  Stream stream;
  const int64_t bytes = (s.n * s.c * s.h * s.w + s.n * s.k * s.p * s.q) * static_cast<int64_t>(sb::dtype_size(r.dtype));
  time_pass(state, stream.get(), bytes, [&] { r.forward(stream.get()); });
}

// The weight and bias gradients (with the partial rows' sum); y from a forward, so the ReLU mask is real.
void BM_first_conv_backward(benchmark::State& state) {
  if (!have_gpu(state)) return;
  FirstConvRun r = first_conv_run(state);
  const sb::kernels::FirstConvShape& s = r.c.shape;
  Stream stream;
  r.forward(stream.get());
  const int64_t outputs_read = r.c.options.relu ? 2 : 1;  // dy, and y for the ReLU's mask
  const int64_t bytes =
      (s.n * s.c * s.h * s.w + outputs_read * s.n * s.k * s.p * s.q) * static_cast<int64_t>(sb::dtype_size(r.dtype));
  time_pass(state, stream.get(), bytes, [&] {
    sb::kernels::first_conv_backward(r.b.x.data(), r.b.y.data(), r.b.dy.data(), static_cast<float*>(r.b.grads.data()),
                                     static_cast<float*>(r.b.workspace.data()), s, r.c.options, r.layout, r.dtype,
                                     stream.get());
  });
}

constexpr sb::kernels::PoolDropoutShape kConv2Output{kMnistBatch, 64, 24, 24};

sb::kernels::PoolDropoutMask training_mask() { return sb::kernels::PoolDropoutMask{0.25, 0x1234, 5, nullptr, 0}; }

struct PoolBuffers {
  sb::cuda::DeviceBuffer z, bias, y, dy, dz, dbias, workspace;
};

PoolBuffers pool_buffers(DType dtype) {
  const sb::kernels::PoolDropoutShape& s = kConv2Output;
  const int64_t pooled = s.n * s.c * (s.h / 2) * (s.w / 2);
  PoolBuffers b;
  fill_random(b.z, s.n * s.c * s.h * s.w, dtype, 21);
  fill_random(b.bias, s.c, DType::F32, 22);
  fill_random(b.dy, pooled, dtype, 23);
  b.y.ensure(static_cast<size_t>(pooled) * sb::dtype_size(dtype));
  b.dz.ensure(static_cast<size_t>(s.n * s.c * s.h * s.w) * sb::dtype_size(dtype));
  b.dbias.ensure(static_cast<size_t>(s.c) * 4);
  b.workspace.ensure(static_cast<size_t>(sb::kernels::pool_dropout_backward_workspace(s)) * 4);
  return b;
}

int64_t pool_bytes(DType dtype, int64_t z_passes) {
  const sb::kernels::PoolDropoutShape& s = kConv2Output;
  const int64_t pooled = s.n * s.c * (s.h / 2) * (s.w / 2);
  return (z_passes * s.n * s.c * s.h * s.w + pooled) * static_cast<int64_t>(sb::dtype_size(dtype));
}

void BM_pool_dropout_forward(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  const DType dtype = dtype_arg(state);
  PoolBuffers b = pool_buffers(dtype);
  Stream stream;
  time_pass(state, stream.get(), pool_bytes(dtype, 1), [&] {
    sb::kernels::bias_relu_pool_dropout_forward(b.z.data(), static_cast<const float*>(b.bias.data()), b.y.data(),
                                                kConv2Output, training_mask(), layout_arg(state), dtype, stream.get());
  });
}

// dz and the bias gradient (with the partial rows' sum): reads z and dy, writes dz.
void BM_pool_dropout_backward(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  const DType dtype = dtype_arg(state);
  PoolBuffers b = pool_buffers(dtype);
  Stream stream;
  time_pass(state, stream.get(), pool_bytes(dtype, 2), [&] {
    sb::kernels::bias_relu_pool_dropout_backward(b.z.data(), static_cast<const float*>(b.bias.data()), b.dy.data(),
                                                 b.dz.data(), static_cast<float*>(b.dbias.data()),
                                                 static_cast<float*>(b.workspace.data()), kConv2Output, training_mask(),
                                                 layout_arg(state), dtype, stream.get());
  });
}

// fc1 + ReLU of mnist-cnn (the fused Linear's cuBLASLt matmuls, autotuned in the untimed runs), forward and
// backward, fp32 with and without TF32. Bytes: the input and the weights, read once by the forward.
void BM_mnist_fc1(benchmark::State& state) {
  if (!have_gpu(state)) return;
  CHECK_CUDA(cudaSetDevice(0));
  sb::cuda::ContextOptions o = options(DType::F32, Layout::NHWC);
  o.tf32 = state.range(0) != 0;
  sb::cuda::Context ctx(o);
  const sb::LayerSpec spec = sb::sequential("", {sb::linear("fc1", 9216, 128, true), sb::relu("relu3")});
  sb::cuda::Network net(spec, 1, ctx);
  const Shape input{kMnistBatch, 9216}, output{kMnistBatch, 128};
  sb::cuda::DeviceBuffer x_mem, dy_mem;
  fill_random(x_mem, input.numel(), DType::F32, 31);
  fill_random(dy_mem, output.numel(), DType::F32, 32);
  const sb::cuda::DeviceTensor x{x_mem.data(), sb::TensorDesc{input, DType::F32, Layout::NCHW}};
  const sb::cuda::DeviceTensor dy{dy_mem.data(), sb::TensorDesc{output, DType::F32, Layout::NCHW}};
  time_pass(state, ctx.stream(), (input.numel() + 9216 * 128) * 4, [&] {
    net.forward(x, sb::cuda::Mode::Train);
    net.backward(dy);
  });
  report_layer_rates(state, kMnistBatch, 2.0 * kMnistBatch * 9216 * 128);
}

}  // namespace small_net
}  // namespace

BENCHMARK(small_net::BM_first_conv_forward)->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(small_net::BM_first_conv_backward)->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(small_net::BM_pool_dropout_forward)->ArgsProduct({{0, 1}, {0, 1}})->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(small_net::BM_pool_dropout_backward)->ArgsProduct({{0, 1}, {0, 1}})->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(small_net::BM_mnist_fc1)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);


BENCHMARK_MAIN();
