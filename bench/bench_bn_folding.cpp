// The forward of a ResNet-50 convolution between two batch norms at batch 256 under NHWC, in bf16 and
// fp16, two ways (docs/cudnn.md, "Batch norm in the convolutions"):
//   separate: the batch norm's apply pass (reads x, writes relu(x*a + b)), the convolution, and the next
//             batch norm's statistics pass over its output (reads y) with their finalize;
//   folded:   one cuDNN graph: the scale-bias-ReLU prologue, the convolution, the sum and sum of squares
//             in its epilogue (conv_forward_fused), where this GPU's cuDNN has an engine for it.
// Plus the convolution alone, the floor of both, and each fold alone: the statistics in the epilogue with the
// apply pass kept, and the prologue with the statistics pass kept. And the backward of the same layer, three ways: the dgrad
// alone; the dgrad and the batch norm's reduce pass (reads the dgrad's output and the batch norm's input,
// recomputing the ReLU's mask, for dscale and dbias); and one cuDNN graph, the dgrad with the mask and the
// reductions in its epilogue (conv_backward_data_bn_relu). Times are CUDA-event times (manual time); plans are built
// and autotuned in an untimed warm-up. A graph without an engine skips its benchmark, saying so.
//
//   build/bench/bench_bn_folding --benchmark_filter=bf16
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "kernels/bn_fused.h"
#include "nn/cuda/context.h"
#include "nn/cuda/conv_ops.h"
#include "nn/cuda/device_buffer.h"

#include "cuda_bench.h"
#include "device_random.h"

namespace {

using sb::DType;
using sb::bench::EventTimer;
using sb::bench::fill_random;

constexpr int64_t kBatch = 256;
enum class Way { ConvOnly = 0, Separate = 1, Folded = 2, StatisticsOnly = 3, PrologueOnly = 4 };

sb::cuda::ConvGeometry geometry(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t hw) {
  const int64_t pad = k / 2;
  const int64_t out = (hw + 2 * pad - k) / stride + 1;
  return sb::cuda::ConvGeometry{kBatch, cin, hw, hw, cout, k, k, out, out, pad, stride};
}

// One benchmark's layer from its args: cin, cout, kernel, stride, input height and width, dtype (0 bf16,
// 1 fp16), way.
struct Layer {
  explicit Layer(const benchmark::State& state)
      : g(geometry(state.range(0), state.range(1), state.range(2), state.range(3), state.range(4))),
        dtype(state.range(5) ? DType::F16 : DType::BF16),
        way(static_cast<Way>(state.range(6))),
        nx(g.n * g.c * g.h * g.w),
        ny(g.n * g.k * g.p * g.q),
        ctx(options(dtype)) {}
  static sb::cuda::ContextOptions options(DType dtype) {
    CHECK_CUDA(cudaSetDevice(0));
    sb::cuda::ContextOptions o;
    o.compute = dtype;
    o.layout = sb::Layout::NHWC;
    return o;
  }
  // Times `body` per iteration after an untimed warm-up that builds and autotunes its plans.
  template <typename Body>
  void time(benchmark::State& state, Body&& body) {
    for (int i = 0; i < 3; ++i) body();
    ctx.synchronize();
    EventTimer timer(ctx.stream());
    for (auto _ : state) state.SetIterationTime(timer.seconds(body));
    state.SetItemsProcessed(state.iterations() * kBatch);
  }
  sb::cuda::ConvGeometry g;
  DType dtype;
  Way way;
  int64_t nx, ny;  // elements of the convolution's input and output
  sb::cuda::Context ctx;
};

// The forward of the layer (args: Layer).
void BM_resnet50_conv_between_bns(benchmark::State& state) {
  if (!sb::bench::have_gpu(state)) return;
  Layer layer(state);
  auto& [g, dt, way, nx, ny, ctx] = layer;
  sb::cuda::DeviceBuffer x, xn, w, y, a32, b32, a16, b16, sums, ws;
  fill_random(x, nx, dt, 1);
  fill_random(w, g.k * g.c * g.r * g.s, dt, 2);
  fill_random(a32, g.c, DType::F32, 3);
  fill_random(b32, g.c, DType::F32, 4);
  fill_random(a16, g.c, dt, 3);
  fill_random(b16, g.c, dt, 4);
  xn.ensure(static_cast<size_t>(nx) * 2);
  y.ensure(static_cast<size_t>(ny) * 2);
  float* channel = static_cast<float*>(sums.ensure(static_cast<size_t>(6 * g.k) * 4));
  const sb::kernels::BnFusedShape in{g.n, g.c, g.h, g.w, sb::Layout::NHWC, dt};
  const sb::kernels::BnFusedShape out{g.n, g.k, g.p, g.q, sb::Layout::NHWC, dt};
  void* workspace = ws.ensure(sb::kernels::bn_fused_workspace_bytes(out));

  sb::cuda::ConvPrologue prologue{a32.data(), b32.data(), DType::F32, true};
  const sb::cuda::ConvStatistics statistics{channel, channel + g.k};
  auto apply_pass = [&] {
    sb::kernels::BnApply apply;
    apply.x = x.data();
    apply.a = static_cast<const float*>(a32.data());
    apply.b = static_cast<const float*>(b32.data());
    apply.y = xn.data();
    sb::kernels::bn_apply_forward(in, apply, ctx.stream());
  };
  auto separate = [&] {
    apply_pass();
    sb::cuda::conv_forward(ctx, g, xn.data(), w.data(), y.data(), nullptr);
    sb::kernels::bn_channel_statistics(out, sb::kernels::BnStatistics{y.data(), workspace}, ctx.stream());
  };
  // Way::StatisticsOnly and PrologueOnly fold one of the two passes and keep the other.
  auto folded = [&] {
    if (way == Way::StatisticsOnly) {
      apply_pass();
      return sb::cuda::conv_forward_fused(ctx, g, xn.data(), nullptr, w.data(), y.data(), &statistics);
    }
    if (way == Way::PrologueOnly) {
      if (!sb::cuda::conv_forward_fused(ctx, g, x.data(), &prologue, w.data(), y.data(), nullptr)) return false;
      sb::kernels::bn_channel_statistics(out, sb::kernels::BnStatistics{y.data(), workspace}, ctx.stream());
      return true;
    }
    return sb::cuda::conv_forward_fused(ctx, g, x.data(), &prologue, w.data(), y.data(), &statistics);
  };
  const bool fusing = way == Way::Folded || way == Way::StatisticsOnly || way == Way::PrologueOnly;
  const char* graph = way == Way::StatisticsOnly ? "conv + genstats"
                      : way == Way::PrologueOnly ? "scale-bias-ReLU + conv"
                                                 : "scale-bias-ReLU + conv + genstats";
  // With a prologue: fp32 coefficients first, then the I/O dtype's (ConvBNfprop's).
  bool runs = !fusing || folded();
  if (!runs && way != Way::StatisticsOnly) {
    prologue = sb::cuda::ConvPrologue{a16.data(), b16.data(), dt, true};
    runs = folded();
  }
  if (!runs) {
    state.SkipWithError((std::string("no cuDNN engine for ") + graph).c_str());
    return;
  }
  if (way == Way::Folded || way == Way::PrologueOnly)
    state.SetLabel(std::string("prologue ") + sb::dtype_name(prologue.dtype));
  auto body = [&] {
    if (way == Way::ConvOnly) sb::cuda::conv_forward(ctx, g, x.data(), w.data(), y.data(), nullptr);
    if (way == Way::Separate) separate();
    if (fusing) folded();
  };
  layer.time(state, body);
}

// The backward of the batch norm (with its ReLU) before the convolution,
// through the convolution's dgrad.
void BM_resnet50_dgrad_into_bn(benchmark::State& state) {
  if (!sb::bench::have_gpu(state)) return;
  Layer layer(state);
  auto& [g, dt, way, nx, ny, ctx] = layer;
  sb::cuda::DeviceBuffer x, w, dy, dz, channel_buffer, ws;
  fill_random(x, nx, dt, 1);
  fill_random(w, g.k * g.c * g.r * g.s, dt, 2);
  fill_random(dy, ny, dt, 3);
  dz.ensure(static_cast<size_t>(nx) * 2);
  fill_random(channel_buffer, 12 * g.c, DType::F32, 4);  // a, b, mean, inv std, gamma, beta, 5 outputs, -mean
  float* ch = static_cast<float*>(channel_buffer.data());
  const sb::kernels::BnFusedShape in{g.n, g.c, g.h, g.w, sb::Layout::NHWC, dt};
  sb::kernels::BnBackward b;
  b.x = x.data();
  b.dy = dz.data();
  b.a = ch;
  b.b = ch + g.c;
  b.saved_mean = ch + 2 * g.c;
  b.saved_inv_std = ch + 3 * g.c;
  b.scale = ch + 4 * g.c;
  b.workspace = ws.ensure(sb::kernels::bn_fused_workspace_bytes(in));
  b.dscale = ch + 6 * g.c;
  b.dbias = ch + 7 * g.c;
  const sb::cuda::DgradBatchNorm folded{x.data(),     ch + 2 * g.c, ch + 11 * g.c, ch + 3 * g.c,
                                        ch + 4 * g.c, ch + 5 * g.c, dz.data(),    ch + 6 * g.c,
                                        ch + 7 * g.c, ch + 8 * g.c, ch + 9 * g.c, ch + 10 * g.c};
  auto fused = [&] { return sb::cuda::conv_backward_data_bn_relu(ctx, g, dy.data(), w.data(), folded); };
  if (way == Way::Folded && !fused()) {
    state.SkipWithError("no cuDNN engine for dgrad + dReLU + dBN weights");
    return;
  }
  auto body = [&] {
    if (way == Way::Folded) {
      fused();
      return;
    }
    sb::cuda::conv_backward_data(ctx, g, dy.data(), w.data(), dz.data());
    if (way == Way::Separate) sb::kernels::bn_backward_reduce(in, b, ctx.stream());
  };
  layer.time(state, body);
}

// Each shape {cin, cout, k, stride, hw} in bf16 and fp16, with the ways 0 to ways - 1.
void add_shapes(benchmark::internal::Benchmark* b, const std::vector<std::vector<int64_t>>& shapes, int64_t ways) {
  for (const auto& s : shapes)
    for (int64_t dtype : {0, 1})
      for (int64_t way = 0; way < ways; ++way) {
        std::vector<int64_t> args = s;
        args.push_back(dtype);
        args.push_back(way);
        b->Args(args);
      }
  b->ArgNames({"cin", "cout", "k", "stride", "hw", "fp16", "way"});
}

// ResNet-50's convolutions that sit between two batch norms: each stage's 1x1 reduce, 3x3 and 1x1 expand.
void resnet50_shapes(benchmark::internal::Benchmark* b, int64_t ways) {
  add_shapes(b,
             {{256, 64, 1, 1, 56},
              {64, 64, 3, 1, 56},
              {64, 256, 1, 1, 56},
              {512, 128, 1, 1, 28},
              {128, 128, 3, 1, 28},
              {128, 512, 1, 1, 28},
              {1024, 256, 1, 1, 14},
              {256, 256, 3, 1, 14},
              {256, 1024, 1, 1, 14},
              {2048, 512, 1, 1, 7},
              {512, 512, 3, 1, 7},
              {512, 2048, 1, 1, 7}},
             ways);
}
void forward_shapes(benchmark::internal::Benchmark* b) { resnet50_shapes(b, 5); }
void backward_shapes(benchmark::internal::Benchmark* b) { resnet50_shapes(b, 3); }
BENCHMARK(BM_resnet50_conv_between_bns)->Apply(forward_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);

// The wrn's convolutions, each before a batch norm (src/models/wide_resnet.cpp): every block's 3x3 pair at
// batch 256 on 32x32 CIFAR images, the first of each stage widening; the ways as above. The wrn ran slower
// with the statistics folded while the ResNets ran faster (docs/decisions.md), and these say which layers.
void wrn_shapes(benchmark::internal::Benchmark* b) {
  add_shapes(b,
             {{16, 160, 3, 1, 32}, {160, 160, 3, 1, 32}, {160, 320, 3, 1, 16}, {320, 320, 3, 1, 16},
              {320, 640, 3, 1, 8}, {640, 640, 3, 1, 8}},
             5);
}
BENCHMARK(BM_resnet50_conv_between_bns)
    ->Name("BM_wrn_conv_between_bns")
    ->Apply(wrn_shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_resnet50_dgrad_into_bn)->Apply(backward_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
