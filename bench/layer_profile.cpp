// The per-layer profile of a model on one GPU (docs/performance.md, "Per-layer profile"): GPU time of each
// layer's forward and backward at a training configuration and the model's own input (`info --models`),
// from CUDA events around every leaf layer (a fused run of batch norm, ReLU, dropout and a residual add
// counts as one). The network runs forward (train mode) and backward on random data, without the loss, the
// optimizer and the step's CUDA graph; plans are built and autotuned in untimed warm-up passes. The last
// lines compare the sum of the layers with the same passes timed as a whole, which shows what the per-layer
// events cost.
//
// --candidates sets how many of cuDNN's engine configurations are built and timed per graph (the
// training default is 8), to see what a wider search would gain; --search-fallback on also times cuDNN's
// fallback list, as PyTorch's cudnn.benchmark does.
//
// --plan-cache DIR reads and writes the on-disk plan cache there, as `train --plan-cache DIR` does, so that
// a second profile runs the stored choices the way a run with a warm cache does; without it every graph is
// searched.
//
//   layer_profile [--model wrn] [--batch-size 256] [--precision bf16] [--layout nhwc] [--passes 20]
//                 [--candidates 8] [--search-fallback on|off] [--plan-cache DIR]
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "models/registry.h"
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer_timer.h"
#include "nn/cuda/network.h"
#include "nn/spec.h"
#include "train/engines/cuda/context_options.h"
#include "train/run_choices.h"
#include "train/train_config.h"

#include "device_random.h"

namespace {

struct Settings {
  std::string model = "wrn";
  int64_t batch = 256;
  sb::Precision precision = sb::Precision::BF16;
  sb::Layout layout = sb::Layout::NHWC;
  int passes = 20;
  int candidates = sb::cuda::ContextOptions{}.autotune_candidates;
  bool search_fallback = sb::cuda::ContextOptions{}.autotune_fallback;
  std::string plan_cache;  // empty: none
};

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr,
               "layer_profile: %s\nusage: layer_profile [--model NAME] [--batch-size N] [--precision "
               "fp32|tf32|fp16|bf16] [--layout nhwc|nchw] [--passes N] [--candidates N] [--search-fallback on|off] "
               "[--plan-cache DIR]\n",
               what.c_str());
  std::exit(2);
}

// The value of an enum option by the training run's own names (train/run_choices.h).
template <class E>
E named(const std::string& option, const std::string& value) {
  const std::optional<E> e = sb::find_by_name<E>(value);
  if (!e) usage_error(option + " must be one of " + sb::name_list<E>() + " (got '" + value + "')");
  return *e;
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage_error("option '" + a + "' needs a value");
    const std::string v = argv[++i];
    if (a == "--model") s.model = v;
    else if (a == "--batch-size") s.batch = std::atoll(v.c_str());
    else if (a == "--precision") s.precision = named<sb::Precision>("--precision", v);
    else if (a == "--layout") s.layout = named<sb::Layout>("--layout", v);
    else if (a == "--passes") s.passes = std::atoi(v.c_str());
    else if (a == "--candidates") s.candidates = std::atoi(v.c_str());
    else if (a == "--search-fallback") s.search_fallback = v == "on";
    else if (a == "--plan-cache") s.plan_cache = v;
    else usage_error("unknown option '" + a + "'");
  }
  if (s.batch < 1) usage_error("--batch-size must be at least 1");
  if (s.passes < 1) usage_error("--passes must be at least 1");
  if (s.candidates < 1) usage_error("--candidates must be at least 1");
  return s;
}

int run(const Settings& s) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "layer_profile: no CUDA device\n");
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(0));
  // The training run's context at this precision and layout, with the plan cache of --plan-cache or none.
  sb::TrainConfig run;
  run.model = s.model;  // the model's own defaults, such as fp16's statistics in the convolutions
  run.precision = s.precision;
  run.layout = s.layout;
  sb::cuda::ContextOptions o = sb::context_options(run);
  o.plan_cache_dir = s.plan_cache;
  o.autotune_candidates = s.candidates;
  o.autotune_fallback = s.search_fallback;
  sb::cuda::Context ctx(o);
  const sb::ModelInput in = sb::model_info(s.model).home_input;  // 3x224x224 for the torchvision ResNets
  sb::cuda::Network net(sb::build_model(s.model, in), 1, ctx);
  const sb::Shape input{s.batch, in.channels, in.height, in.width};
  const sb::Shape output = sb::output_shape(net.spec(), input);
  sb::cuda::DeviceBuffer x_mem, dy_mem;
  sb::bench::fill_random(x_mem, input.numel(), o.compute, 2);
  sb::bench::fill_random(dy_mem, output.numel(), o.compute, 3);
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
              s.model.c_str(), static_cast<long long>(s.batch), sb::name_of(s.precision), sb::name_of(s.layout), s.passes,
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
  // Each graph's chosen engine and its autotuned time: a layer slower than its graph is paying for the
  // kernels around the graph; a graph slower than another program's kernel, for the engine choice.
  std::printf("\ncuDNN graphs (autotuned ms of the chosen plan, candidates built of proposed, engine; \"cached\": from "
              "the plan cache, with the time stored there):\n");
  for (const auto& r : ctx.plans().reports())
    std::printf("%9.3f ms %3d/%-3d %-28s %s%s\n", r.ms, r.built, r.heuristics, r.chosen.c_str(), r.cached ? "cached " : "",
                r.key.c_str());
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
