// A whole small network on the CUDA path against the CPU Network from the same spec and seed: conv (bias)
// - BN - ReLU - max pool - strided conv - BN - ReLU - residual block - flatten (spatial > 1, so NHWC must
// transpose) - dropout - linear - log-softmax. Forward and backward in every precision and layout, an Eval
// forward, and the training step replayed from a CUDA graph.
#include "test_layers_support.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "nn/cpu/network.h"
#include "nn/cuda/network.h"

namespace sb::layertest {
namespace {

LayerSpec tiny_net() {
  return sequential("", {conv2d("conv1", 3, 8, 3, 1, 1, true), batchnorm2d("bn1", 8), relu("relu1"),
                         maxpool2d("pool1", 2, 2), conv2d("conv2", 8, 16, 3, 2, 1, false), batchnorm2d("bn2", 16),
                         relu("relu2"),
                         residual("block", sequential("main", {conv2d("conv", 16, 16, 3, 1, 1, false),
                                                               batchnorm2d("bn", 16), relu("relu")}),
                                  {}),
                         flatten("flat"), dropout("drop", 0.25), linear("fc", 16 * 4 * 4, 10, true),
                         log_softmax("logp")});
}

const Shape kInput{6, 3, 16, 16};
constexpr uint64_t kSeed = 2024, kStreamKey = 77, kStep = 3;

// Errors compound through ten layers, so the network gets more room than one layer. In 16 bits the GPU
// rounds every activation and the double reference does not, so a max-pool window or a ReLU near a tie
// can route a gradient differently: measured on an H200, bf16 gives 3.2% on dx and up to 5.2% on single
// gradient tensors, fp16 eight times less (its 3 extra mantissa bits), both layouts alike.
double network_tolerance(const Precision& p) {
  if (p.dtype == DType::F32) return p.tf32 ? 3e-3 : 1e-5;
  return p.dtype == DType::BF16 ? 6e-2 : 2e-2;
}

struct Pair {
  cpu::Network<double> cpu{tiny_net(), kSeed};
  cuda::Context ctx;
  cuda::Network gpu;
  std::vector<float> x, dy;
  std::optional<DeviceMem> d_x, d_dy;

  explicit Pair(const cuda::ContextOptions& o) : ctx(o), gpu(tiny_net(), kSeed, ctx, cuda::NetworkOutput::AsSpecified, cuda::InputGradient::Compute) {
    const DType dt = o.compute;
    // Identical starting weights, rounded to the compute dtype on both sides (the master then equals its copy).
    std::vector<float> p = gpu.get_params();
    EXPECT_EQ(p.size(), cpu.params().size());
    for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p[i], static_cast<float>(cpu.params()[i])) << "param " << i;
    gputest::quantize(p, dt);
    gpu.set_params(p);
    cpu.params().assign(p.begin(), p.end());
    std::mt19937_64 rng(9);
    x = normal_values(static_cast<size_t>(kInput.numel()), rng, dt);
    dy = normal_values(60, rng, dt);
    d_x.emplace(gputest::to_device(to_device_order(x, kInput, o.layout), dt));
    d_dy.emplace(gputest::to_device(dy, dt));
    cpu.set_random_stream(kStreamKey, kStep);
    gpu.set_random_stream(kStreamKey, kStep);
  }
  cuda::DeviceTensor input() const { return {d_x->get(), TensorDesc{kInput, ctx.compute_dtype(), ctx.layout()}}; }
  cuda::DeviceTensor grad_output() const { return {d_dy->get(), TensorDesc{Shape{6, 10}, ctx.compute_dtype(), Layout::NCHW}}; }
};

TEST(CudaNetwork, TrainStepMatchesCpuNetwork) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      Pair n(options_for(p, layout));
      const Tensor<double> x_host = host_tensor(n.x, kInput), dy_host = host_tensor(n.dy, Shape{6, 10});
      const auto& ref_y = n.cpu.forward(x_host, cuda::Mode::Train);
      const auto ref_dx = values(n.cpu.backward(dy_host));
      const cuda::DeviceTensor& y = n.gpu.forward(n.input(), cuda::Mode::Train);
      const cuda::DeviceTensor& dx = n.gpu.backward(n.grad_output());
      Errors e;
      e.y = rel_error(from_device(y), values(ref_y));
      e.dx = rel_error(from_device(dx), ref_dx);
      e.grads = rel_error(n.gpu.get_grads(), n.cpu.grads());
      e.buffers = rel_error(n.gpu.get_buffers(), n.cpu.buffers());
      const std::string name = label(p, layout, "tiny net train step");
      std::printf("[case] %-48s %s\n", name.c_str(), e.str().c_str());
      std::fflush(stdout);
      EXPECT_LE(e.worst(), network_tolerance(p)) << name << ": " << e.str();
      // Per-parameter-tensor errors, to locate a failure. A bias right before a BN has a gradient that is
      // zero in exact arithmetic, so each tensor's error is relative to at least its share of the whole
      // gradient's norm, ||g|| * sqrt(tensor size / all parameters).
      const auto g = n.gpu.get_grads();
      double all = 0;
      for (double v : n.cpu.grads()) all += v * v;
      all = std::sqrt(all);
      for (const auto& s : n.gpu.param_specs()) {
        double num = 0, den = 0;
        for (int64_t i = s.offset; i < s.offset + s.shape.numel(); ++i) {
          const double want = n.cpu.grads()[static_cast<size_t>(i)];
          num += (g[static_cast<size_t>(i)] - want) * (g[static_cast<size_t>(i)] - want);
          den += want * want;
        }
        const double share = all * std::sqrt(static_cast<double>(s.shape.numel()) / static_cast<double>(g.size()));
        const double err = std::sqrt(num) / std::max(std::sqrt(den), share);
        if (!(err <= network_tolerance(p))) ADD_FAILURE() << name << ": gradient of " << s.name << " off by " << err;
      }
      if (e.worst() > network_tolerance(p)) print_plans(n.ctx, name);
    }
}

TEST(CudaNetwork, EvalForwardMatchesCpuNetwork) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      Pair n(options_for(p, layout));
      const Tensor<double> x_host = host_tensor(n.x, kInput);
      const auto& ref_y = n.cpu.forward(x_host, cuda::Mode::Eval);
      const cuda::DeviceTensor& y = n.gpu.forward(n.input(), cuda::Mode::Eval);
      const double err = rel_error(from_device(y), values(ref_y));
      const std::string name = label(p, layout, "tiny net eval");
      std::printf("[case] %-48s y %.3g\n", name.c_str(), err);
      std::fflush(stdout);
      EXPECT_LE(err, network_tolerance(p)) << name;
    }
}

// By default the network skips its input gradient (the first convolution's dgrad): backward returns a
// tensor without data, and every parameter gradient is the one the full backward computes. The first
// convolution (3 -> 8 channels) then runs on our kernels instead of cuDNN's (nn/fusion_plan.h), whose sums
// round differently: the gradients agree within the network's tolerance of each precision.
TEST(CudaNetwork, SkippedInputGradientLeavesTheParameterGradients) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      Pair n(options_for(p, layout));
      cuda::Network skipping(tiny_net(), kSeed, n.ctx);
      skipping.set_params(n.gpu.get_params());
      skipping.set_random_stream(kStreamKey, kStep);
      n.gpu.forward(n.input(), cuda::Mode::Train);
      const cuda::DeviceTensor& full_dx = n.gpu.backward(n.grad_output());
      skipping.forward(n.input(), cuda::Mode::Train);
      const cuda::DeviceTensor& dx = skipping.backward(n.grad_output());
      EXPECT_NE(full_dx.data, nullptr);
      EXPECT_EQ(dx.data, nullptr) << "the input gradient was computed";
      EXPECT_EQ(dx.shape(), kInput);
      const std::vector<float> want = n.gpu.get_grads(), got = skipping.get_grads();
      const double err = rel_error(got, std::vector<double>(want.begin(), want.end()));
      const std::string name = label(p, layout, "tiny net, input gradient skipped");
      std::printf("[case] %-48s grads %.3g\n", name.c_str(), err);
      EXPECT_LE(err, network_tolerance(p)) << name << ": the gradients differ once the input gradient is skipped";
    }
}

// Backward reports finished gradients in the reverse of the flat buffer's order (for the all-reduce
// overlap), and ends having reported the first parameter.
TEST(CudaNetwork, GradientReadyHookRunsInReverseBufferOrder) {
  SKIP_WITHOUT_GPU();
  Pair n(options_for(kPrecisions[0], Layout::NHWC));
  std::vector<int64_t> offsets;
  n.ctx.set_gradient_ready_hook([&](const float* first, cudaStream_t) { offsets.push_back(first - n.gpu.grads()); });
  n.gpu.forward(n.input(), cuda::Mode::Train);
  n.gpu.backward(n.grad_output());
  ASSERT_FALSE(offsets.empty());
  for (size_t i = 1; i < offsets.size(); ++i) EXPECT_LT(offsets[i], offsets[i - 1]) << "call " << i;
  EXPECT_EQ(offsets.back(), 0);
  // Every layer with parameters reports its first parameter.
  std::vector<int64_t> firsts;
  for (const auto& s : n.gpu.param_specs())
    if (s.name.size() >= 7 && s.name.compare(s.name.size() - 7, 7, ".weight") == 0) firsts.push_back(s.offset);
  std::vector<int64_t> reported(offsets.rbegin(), offsets.rend());
  EXPECT_EQ(reported, firsts);
}

// A residual block with a projection shortcut also reports in reverse buffer order.
TEST(CudaNetwork, GradientReadyOrderWithProjectionShortcut) {
  SKIP_WITHOUT_GPU();
  cuda::Context ctx(options_for(kPrecisions[0], Layout::NCHW));
  const LayerSpec spec = residual("res", sequential("main", {conv2d("c1", 4, 8, 3, 2, 1, false), relu("r")}),
                                  {conv2d("proj", 4, 8, 1, 2, 0, false)});
  cuda::Network net(spec, 3, ctx);
  std::vector<int64_t> offsets;
  ctx.set_gradient_ready_hook([&](const float* first, cudaStream_t) { offsets.push_back(first - net.grads()); });
  std::mt19937_64 rng(4);
  const Shape in{2, 4, 8, 8};
  DeviceMem x = gputest::to_device(normal_values(static_cast<size_t>(in.numel()), rng, DType::F32), DType::F32);
  const cuda::DeviceTensor& y = net.forward({x.get(), TensorDesc{in, DType::F32, Layout::NCHW}}, cuda::Mode::Train);
  DeviceMem dy = gputest::to_device(normal_values(static_cast<size_t>(y.numel()), rng, DType::F32), DType::F32);
  net.backward({dy.get(), y.desc});
  EXPECT_EQ(offsets, (std::vector<int64_t>{8 * 4 * 9, 0}));
}

// After one eager warm-up step no buffer moves, so forward + backward can be captured and replayed.
TEST(CudaNetwork, StepReplaysFromCudaGraph) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : kLayouts) {
    cuda::ContextOptions o = options_for(kPrecisions[2], layout);
    o.deterministic = true;  // bitwise comparison
    Pair n(o);
    const cuda::DeviceTensor& y0 = n.gpu.forward(n.input(), cuda::Mode::Train);
    const void* const eager_y_data = y0.data;
    n.gpu.backward(n.grad_output());
    const auto eager_y = from_device(y0);
    const auto eager_g = n.gpu.get_grads();

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ASSERT_CUDA(cudaStreamBeginCapture(n.ctx.stream(), cudaStreamCaptureModeThreadLocal));
    const cuda::DeviceTensor& y1 = n.gpu.forward(n.input(), cuda::Mode::Train);
    n.gpu.backward(n.grad_output());
    ASSERT_CUDA(cudaStreamEndCapture(n.ctx.stream(), &graph));
    ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    ASSERT_CUDA(cudaMemset(n.gpu.grads(), 0xFF, static_cast<size_t>(n.gpu.param_count()) * 4));  // poison
    ASSERT_CUDA(cudaGraphLaunch(exec, n.ctx.stream()));
    ASSERT_CUDA(cudaStreamSynchronize(n.ctx.stream()));
    EXPECT_EQ(y1.data, eager_y_data) << "the output moved between steps";
    const auto graph_y = from_device(y1);
    const auto graph_g = n.gpu.get_grads();
    EXPECT_EQ(std::memcmp(graph_y.data(), eager_y.data(), eager_y.size() * 4), 0) << layout_name(layout);
    EXPECT_EQ(std::memcmp(graph_g.data(), eager_g.data(), eager_g.size() * 4), 0) << layout_name(layout);
    ASSERT_CUDA(cudaGraphExecDestroy(exec));
    ASSERT_CUDA(cudaGraphDestroy(graph));
  }
}

}  // namespace
}  // namespace sb::layertest
