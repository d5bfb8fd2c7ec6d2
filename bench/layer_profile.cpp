// The per-layer profile of a model on one GPU (docs/performance.md, "Per-layer profile"): GPU time of each
// layer's forward and backward at a training configuration, from CUDA events around every leaf layer
// (a fused run of batch norm, ReLU, dropout and a residual add counts as one). The network runs forward
// (train mode) and backward on random data, without the loss, the optimizer and the step's CUDA graph;
// plans are built and autotuned in untimed warm-up passes. The last lines compare the sum of the layers
// with the same passes timed as a whole, which shows what the per-layer events cost.
//
// --candidates sets how many of cuDNN's engine configurations are built and timed per graph (the
// training default is 8), to see what a wider search would gain.
//
//   layer_profile [--model wrn] [--batch-size 256] [--precision bf16] [--layout nhwc] [--passes 20]
//                 [--candidates 8]
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/registry.h"
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer_timer.h"
#include "nn/cuda/network.h"
#include "nn/spec.h"

namespace {

struct Settings {
  std::string model = "wrn";
  int64_t batch = 256;
  std::string precision = "bf16";
  std::string layout = "nhwc";
  int passes = 20;
  int candidates = sb::cuda::ContextOptions{}.autotune_candidates;
};

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr,
               "layer_profile: %s\nusage: layer_profile [--model NAME] [--batch-size N] [--precision "
               "fp32|tf32|fp16|bf16] [--layout nhwc|nchw] [--passes N] [--candidates N]\n",
               what.c_str());
  std::exit(2);
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage_error("option '" + a + "' needs a value");
    const std::string v = argv[++i];
    if (a == "--model") s.model = v;
    else if (a == "--batch-size") s.batch = std::atoll(v.c_str());
    else if (a == "--precision") s.precision = v;
    else if (a == "--layout") s.layout = v;
    else if (a == "--passes") s.passes = std::atoi(v.c_str());
    else if (a == "--candidates") s.candidates = std::atoi(v.c_str());
    else usage_error("unknown option '" + a + "'");
  }
  if (s.batch < 1) usage_error("--batch-size must be at least 1");
  if (s.passes < 1) usage_error("--passes must be at least 1");
  if (s.candidates < 1) usage_error("--candidates must be at least 1");
  if (s.precision != "fp32" && s.precision != "tf32" && s.precision != "fp16" && s.precision != "bf16")
    usage_error("--precision must be fp32, tf32, fp16 or bf16 (got '" + s.precision + "')");
  if (s.layout != "nhwc" && s.layout != "nchw") usage_error("--layout must be nhwc or nchw (got '" + s.layout + "')");
  return s;
}

// Normal random values of `count` elements of `dtype` in device memory.
void fill_random(sb::cuda::DeviceBuffer& buffer, int64_t count, sb::DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const size_t n = static_cast<size_t>(count);
  if (dtype == sb::DType::F32) {
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    CHECK_CUDA(cudaMemcpy(buffer.ensure(n * 4), v.data(), n * 4, cudaMemcpyHostToDevice));
    return;
  }
  std::vector<uint16_t> bits(n);
  for (uint16_t& b : bits)
    b = dtype == sb::DType::BF16 ? sb::float_to_bf16_bits(d(rng)) : sb::float_to_fp16_bits(d(rng));
  CHECK_CUDA(cudaMemcpy(buffer.ensure(n * 2), bits.data(), n * 2, cudaMemcpyHostToDevice));
}

int run(const Settings& s) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "layer_profile: no CUDA device\n");
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(0));
  sb::cuda::ContextOptions o;
  o.compute = s.precision == "bf16" ? sb::DType::BF16 : s.precision == "fp16" ? sb::DType::F16 : sb::DType::F32;
  o.tf32 = s.precision == "tf32";
  o.layout = s.layout == "nhwc" ? sb::Layout::NHWC : sb::Layout::NCHW;
  o.autotune_candidates = s.candidates;
  sb::cuda::Context ctx(o);
  const sb::ModelInput in = s.model == "mnist-cnn" || s.model == "mlp" ? sb::ModelInput{1, 28, 28, 10}
                                                                         : sb::ModelInput{3, 32, 32, 100};
  sb::cuda::Network net(sb::build_model(s.model, in), 1, ctx);
  const sb::Shape input{s.batch, in.channels, in.height, in.width};
  const sb::Shape output = sb::output_shape(net.spec(), input);
  sb::cuda::DeviceBuffer x_mem, dy_mem;
  fill_random(x_mem, input.numel(), o.compute, 2);
  fill_random(dy_mem, output.numel(), o.compute, 3);
  auto layout_of = [&](const sb::Shape& shape) { return shape.rank() == 4 ? o.layout : sb::Layout::NCHW; };
  const sb::cuda::DeviceTensor x{x_mem.data(), sb::TensorDesc{input, o.compute, layout_of(input)}};
  const sb::cuda::DeviceTensor dy{dy_mem.data(), sb::TensorDesc{output, o.compute, layout_of(output)}};
  auto pass = [&] {
    net.forward(x, sb::cuda::Mode::Train);
    net.backward(dy);
  };
  for (int i = 0; i < 3; ++i) pass();  // plans built and autotuned, buffers grown
  ctx.synchronize();

  // The passes as a whole, without per-layer events.
  cudaEvent_t start = nullptr, stop = nullptr;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, ctx.stream()));
  for (int i = 0; i < s.passes; ++i) pass();
  CHECK_CUDA(cudaEventRecord(stop, ctx.stream()));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float whole_ms = 0.0f;
  CHECK_CUDA(cudaEventElapsedTime(&whole_ms, start, stop));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));

  sb::cuda::LayerTimer timer;
  ctx.set_layer_timer(&timer);
  for (int i = 0; i < s.passes; ++i) {
    pass();
    timer.collect();
  }
  ctx.set_layer_timer(nullptr);

  const double per = 1e3 / s.passes;  // seconds summed over the passes -> ms per pass
  std::printf("per-layer profile: %s, batch %lld, %s %s, %d passes, %d autotune candidates (ms per forward+backward "
              "pass)\n",
              s.model.c_str(), static_cast<long long>(s.batch), s.precision.c_str(), s.layout.c_str(), s.passes,
              s.candidates);
  std::printf("%-44s %10s %10s %10s\n", "layer", "forward", "backward", "total");
  double fwd = 0.0, bwd = 0.0;
  for (const auto& r : timer.rows()) {
    std::printf("%-44s %10.3f %10.3f %10.3f\n", r.label.c_str(), r.forward_s * per, r.backward_s * per,
                (r.forward_s + r.backward_s) * per);
    fwd += r.forward_s;
    bwd += r.backward_s;
  }
  std::printf("%-44s %10.3f %10.3f %10.3f\n", "sum of layers", fwd * per, bwd * per, (fwd + bwd) * per);
  std::printf("%-44s %32.3f\n", "whole pass, no per-layer events", whole_ms / s.passes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "layer_profile: %s\n", e.what());
    return 1;
  }
}
