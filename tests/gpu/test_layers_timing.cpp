// Timings of the cuDNN graphs the layers build, on a WRN-sized layer (batch 256, 160 channels, 32x32,
// bf16, NHWC): what autotuning picks, fused versus separate (BN+ReLU, conv+bias), and bf16 versus fp32
// dw for wgrad. The numbers behind docs/cudnn.md. Slow (runtime-compiled engines are built), so it runs
// only with SB_TIMING=1.
#include "test_layers_support.h"

#include <cstdlib>

#include "kernels/elementwise.h"
#include "nn/cuda/bn_ops.h"
#include "nn/cuda/conv_ops.h"
#include "nn/cuda/factory.h"

namespace sb::layertest {
namespace {

bool timing_enabled() {
  const char* v = std::getenv("SB_TIMING");
  return v && std::string(v) == "1";
}

// Median milliseconds of fn over `runs` launches on the context's stream, after two warm-ups.
template <typename F>
float time_ms(cuda::Context& ctx, F&& fn, int runs = 20) {
  fn();
  fn();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < runs; ++i) {
    cudaEventRecord(a, ctx.stream());
    fn();
    cudaEventRecord(b, ctx.stream());
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

TEST(CudaTiming, WrnSizedLayerBf16Nhwc) {
  SKIP_WITHOUT_GPU();
  if (!timing_enabled()) GTEST_SKIP() << "set SB_TIMING=1";
  cuda::ContextOptions o;
  o.compute = DType::BF16;
  o.layout = Layout::NHWC;
  cuda::Context ctx(o);
  const int64_t n = 256, c = 160, h = 32, w = 32;
  const size_t act = static_cast<size_t>(n * c * h * w);
  std::mt19937_64 rng(1);
  DeviceMem x = gputest::to_device(normal_values(act, rng, DType::BF16), DType::BF16);
  DeviceMem dy = gputest::to_device(normal_values(act, rng, DType::BF16), DType::BF16);
  DeviceMem y(act * 2), dx(act * 2);
  DeviceMem wt = gputest::to_device(normal_values(static_cast<size_t>(c * c * 9), rng, DType::BF16), DType::BF16);
  DeviceMem dw16(static_cast<size_t>(c * c * 9) * 2), dw32(static_cast<size_t>(c * c * 9) * 4);
  DeviceMem bias = gputest::to_device(normal_values(static_cast<size_t>(c), rng, DType::F32), DType::F32);
  const cuda::ConvGeometry g{n, c, h, w, c, 3, 3, h, w, 1, 1};
  const double flops = 2.0 * n * c * h * w * c * 9;

  const float fprop = time_ms(ctx, [&] { cuda::conv_forward(ctx, g, x.get(), wt.get(), y.get(), nullptr); });
  const float dgrad = time_ms(ctx, [&] { cuda::conv_backward_data(ctx, g, dy.get(), wt.get(), dx.get()); });
  const float wgrad16 = time_ms(ctx, [&] { cuda::conv_backward_filter(ctx, g, x.get(), dy.get(), dw16.get(), DType::BF16, ctx.stream()); });
  const float wgrad32 = time_ms(ctx, [&] { cuda::conv_backward_filter(ctx, g, x.get(), dy.get(), dw32.get(), DType::F32, ctx.stream()); });
  const float widen = time_ms(ctx, [&] {
    kernels::accumulate_into_f32(dw16.get(), DType::BF16, dw32.as<float>(), c * c * 9, false, ctx.stream());
  });
  bool fused_ok = true;
  const float fused_bias = time_ms(ctx, [&] {
    fused_ok = cuda::conv_forward(ctx, g, x.get(), wt.get(), y.get(), bias.as<float>());
  });
  const float bias_kernel = time_ms(ctx, [&] {
    kernels::bias_add(y.get(), DType::BF16, bias.get(), DType::F32, n, c, h, w, Layout::NHWC, ctx.stream());
  });

  // Batch norm: training forward with and without the fused ReLU, and backward.
  DeviceMem scale = gputest::to_device(std::vector<float>(static_cast<size_t>(c), 1.0f), DType::F32);
  DeviceMem stats(static_cast<size_t>(8 * c) * 4);
  gputest::upload(std::vector<float>(static_cast<size_t>(8 * c), 1.0f), DType::F32, stats.get());
  DeviceMem grads(static_cast<size_t>(2 * c) * 4);
  float eps = 1e-5f, momentum = 0.1f;
  float* s = stats.as<float>();
  const cuda::BnShape bs{n, c, h, w};
  auto bn_forward = [&](bool relu) {
    cuda::BnForwardTraining a;
    a.x = x.get(); a.y = y.get(); a.scale = scale.as<float>(); a.bias = bias.as<float>();
    a.saved_mean = s; a.saved_inv_std = s + c; a.running_mean_in = s + 2 * c; a.running_var_in = s + 3 * c;
    a.running_mean_out = s + 4 * c; a.running_var_out = s + 5 * c; a.epsilon = &eps; a.momentum = &momentum;
    a.relu = relu;
    return cuda::bn_forward_training_graph(ctx, bs, a);
  };
  bool bn_ok = true, bn_relu_ok = true, bn_bwd_ok = true;
  const float bn_plain = time_ms(ctx, [&] { bn_ok = bn_forward(false); });
  const float bn_relu = time_ms(ctx, [&] { bn_relu_ok = bn_forward(true); });
  const float relu_kernel = time_ms(ctx, [&] { kernels::relu_forward(y.get(), y.get(), static_cast<int64_t>(act), DType::BF16, ctx.stream()); });
  const float bn_bwd = time_ms(ctx, [&] {
    cuda::BnBackward a;
    a.x = x.get(); a.dy = dy.get(); a.scale = scale.as<float>(); a.saved_mean = s; a.saved_inv_std = s + c;
    a.dscale = grads.as<float>(); a.dbias = grads.as<float>() + c; a.dx = dx.get();
    bn_bwd_ok = cuda::bn_backward_graph(ctx, bs, a);
  });
  // The Conv2d layer itself: fprop plus the KCRS -> KRSC weight transpose; dgrad + wgrad plus the dw
  // transpose back and the widening into the fp32 gradient.
  const LayerSpec conv_spec = conv2d("conv", c, c, 3, 1, 1, false);
  DeviceMem master(static_cast<size_t>(c * c * 9) * 4), grad32(static_cast<size_t>(c * c * 9) * 4);
  auto layer = cuda::make_layer(conv_spec, ctx);
  cuda::ParamViews views;
  views.params = master.as<float>();
  views.grads = grad32.as<float>();
  views.compute_params = wt.get();
  views.compute = DType::BF16;
  layer->bind(views);
  const cuda::DeviceTensor xt{x.get(), TensorDesc{Shape{n, c, h, w}, DType::BF16, Layout::NHWC}};
  const cuda::DeviceTensor dyt{dy.get(), TensorDesc{Shape{n, c, h, w}, DType::BF16, Layout::NHWC}};
  const float layer_fwd = time_ms(ctx, [&] { layer->forward(xt, cuda::Mode::Train); });
  const float layer_bwd = time_ms(ctx, [&] { layer->backward(dyt); });
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  auto rate = [&](float ms) { return flops / (ms * 1e-3) / 1e12; };
  std::printf("[timing] conv fprop 3x3 160->160 32x32 b256 bf16 NHWC: %.1f us (%.0f TFLOP/s)\n", fprop * 1e3, rate(fprop));
  std::printf("[timing] conv dgrad: %.1f us (%.0f TFLOP/s)\n", dgrad * 1e3, rate(dgrad));
  std::printf("[timing] conv wgrad, dw bf16: %.1f us (%.0f TFLOP/s) + widen to fp32 %.1f us\n", wgrad16 * 1e3,
              rate(wgrad16), widen * 1e3);
  std::printf("[timing] conv wgrad, dw fp32: %.1f us (%.0f TFLOP/s)\n", wgrad32 * 1e3, rate(wgrad32));
  std::printf("[timing] conv+bias fused graph: %s %.1f us; conv then bias kernel: %.1f + %.1f us\n",
              fused_ok ? "ran" : "NO ENGINE", fused_bias * 1e3, fprop * 1e3, bias_kernel * 1e3);
  std::printf("[timing] BN forward training: %s %.1f us; BN+ReLU fused: %s %.1f us; ReLU kernel %.1f us\n",
              bn_ok ? "graph" : "NO ENGINE", bn_plain * 1e3, bn_relu_ok ? "graph" : "NO ENGINE", bn_relu * 1e3,
              relu_kernel * 1e3);
  std::printf("[timing] BN backward: %s %.1f us\n", bn_bwd_ok ? "graph" : "NO ENGINE", bn_bwd * 1e3);
  std::printf("[timing] Conv2d layer forward %.1f us (graph %.1f), backward %.1f us (graphs %.1f + %.1f)\n",
              layer_fwd * 1e3, fprop * 1e3, layer_bwd * 1e3, dgrad * 1e3, wgrad16 * 1e3);
  print_plans(ctx, "timing");
}

}  // namespace
}  // namespace sb::layertest
