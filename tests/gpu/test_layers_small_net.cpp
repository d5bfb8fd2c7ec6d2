// The small-network fused layers (nn/fusion_plan.h's FirstConv, ConvReluPool and LinearRelu paths)
// against the CPU reference layers they replace: y, dx and the parameter gradients in fp32/tf32/bf16/fp16,
// NCHW and NHWC, Train and Eval, on fresh random inputs; their gradients bit for bit the same on a second
// run; and the whole mnist-cnn network, which the planner builds from all three, against the CPU network.
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/mnist_cnn.h"
#include "nn/cpu/network.h"
#include "nn/cuda/factory.h"
#include "nn/cuda/network.h"
#include "test_layers_support.h"

namespace sb::layertest {
namespace {

// dx and the gradients of several layers: a ReLU or a pool window near a tie flips with the rounding of
// tf32 or 16-bit activations and moves a whole dy (see test_layers_bn_fused.cpp); fp32 keeps its tolerance.
double block_grad_tolerance(const Precision& p) { return p.dtype == DType::F32 && !p.tf32 ? p.tol : 0.1; }

// The output of a whole network, whose activations are rounded at every layer (test_network_small.cpp).
double network_output_tolerance(const Precision& p) {
  if (p.dtype == DType::F32) return p.tf32 ? 3e-3 : 1e-5;
  return p.dtype == DType::BF16 ? 6e-2 : 2e-2;
}

struct RunResult {
  Errors e;
  std::vector<float> grads;  // the GPU's parameter gradients, for the repeatability check
};

// Runs `run` (the specs one plan step covers) as the fused layer `path` and as the CPU layers, from the same
// parameters, input and output gradient. input_gradient: whether the fused layer returns dx.
RunResult run_fused(const std::vector<LayerSpec>& run, FusionPath path, const Shape& input, cuda::Context& ctx,
                    uint64_t seed, cuda::Mode mode, bool input_gradient, int repeats = 1) {
  const DType dtype = ctx.compute_dtype();
  const LayerSpec seq = sequential("", run);
  std::mt19937_64 rng(seed);
  const std::vector<float> params = case_params(seq, seed, dtype, rng);
  const std::vector<float> x = normal_values(static_cast<size_t>(input.numel()), rng, dtype);
  const size_t np = params.size();
  const uint64_t key = 0xabc, step = 7;

  cpu::Network<double> ref(seq, seed);
  ref.params().assign(params.begin(), params.end());
  ref.set_random_stream(key, step);
  const Tensor<double> x_host = host_tensor(x, input);
  const Tensor<double>& ref_y = ref.forward(x_host, mode);
  const Shape y_shape = ref_y.shape();
  const std::vector<double> ref_y_values = values(ref_y);
  const std::vector<float> dy = normal_values(static_cast<size_t>(y_shape.numel()), rng, dtype);
  const Tensor<double> dy_host = host_tensor(dy, y_shape);
  std::vector<double> ref_dx;
  if (mode == cuda::Mode::Train) ref_dx = values(ref.backward(dy_host));

  auto layer = cuda::make_fused_layer(run, path, ctx);
  DeviceMem d_params(np * 4 + 4), d_grads(np * 4 + 4), d_compute(np * dtype_size(dtype) + 4);
  gputest::upload(params, DType::F32, d_params.get());
  gputest::upload(params, dtype, d_compute.get());
  cuda::ParamViews views;
  views.params = d_params.as<float>();
  views.grads = d_grads.as<float>();
  views.compute_params = dtype == DType::F32 ? d_params.get() : d_compute.get();
  views.compute = dtype;
  layer->bind(views);
  layer->set_random_stream(key, step);
  DeviceMem d_x(x.size() * dtype_size(dtype)), d_dy(dy.size() * dtype_size(dtype));
  gputest::upload(to_device_order(x, input, ctx.layout()), dtype, d_x.get());
  const cuda::DeviceTensor xt{d_x.get(), TensorDesc{input, dtype, cuda::layout_for(input, ctx)}};

  RunResult r;
  for (int rep = 0; rep < repeats; ++rep) {
    d_grads.poison();  // every gradient must be written
    const cuda::DeviceTensor& y = layer->forward(xt, mode);
    EXPECT_EQ(y.shape(), y_shape);
    r.e.y = rel_error(from_device(y), ref_y_values);
    if (mode != cuda::Mode::Train) continue;
    gputest::upload(to_device_order(dy, y_shape, y.layout()), dtype, d_dy.get());
    const cuda::DeviceTensor dyt{d_dy.get(), TensorDesc{y_shape, dtype, y.layout()}};
    const cuda::DeviceTensor& dx = layer->backward(dyt);
    if (input_gradient) r.e.dx = rel_error(from_device(dx), ref_dx);
    else EXPECT_EQ(dx.data, nullptr) << "the first layer computes no input gradient";
    r.grads = gputest::download(d_grads.get(), np, DType::F32);
    r.e.grads = rel_error(r.grads, ref.grads());
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return r;
}

void check_fused_everywhere(const std::vector<LayerSpec>& run, FusionPath path, const Shape& input,
                            const std::string& what, uint64_t seed, bool input_gradient) {
  for (cuda::Mode mode : {cuda::Mode::Train, cuda::Mode::Eval})
    for (const Precision& p : kPrecisions)
      for (Layout layout : kLayouts) {
        cuda::Context ctx(options_for(p, layout));
        const Errors e = run_fused(run, path, input, ctx, seed, mode, input_gradient).e;
        const std::string name = label(p, layout, what + (mode == cuda::Mode::Train ? " train" : " eval"));
        std::printf("[case] %-56s %s\n", name.c_str(), e.str().c_str());
        std::fflush(stdout);
        EXPECT_LE(e.y, p.tol) << name << ": " << e.str();
        EXPECT_LE(e.dx, block_grad_tolerance(p)) << name << ": " << e.str();
        EXPECT_LE(e.grads, block_grad_tolerance(p)) << name << ": " << e.str();
      }
}

// Two runs of the same layer give the same gradient bits (no float atomics in the reductions).
void check_repeatable(const std::vector<LayerSpec>& run, FusionPath path, const Shape& input, bool input_gradient) {
  for (Layout layout : kLayouts) {
    cuda::Context ctx(options_for(kPrecisions[0], layout));
    const auto once = run_fused(run, path, input, ctx, 5, cuda::Mode::Train, input_gradient, 1).grads;
    const auto again = run_fused(run, path, input, ctx, 5, cuda::Mode::Train, input_gradient, 3).grads;
    ASSERT_EQ(once.size(), again.size());
    EXPECT_EQ(std::memcmp(once.data(), again.data(), once.size() * sizeof(float)), 0) << layout_name(layout);
  }
}

std::vector<LayerSpec> first_conv(int64_t k, int64_t stride, int64_t pad, int64_t in = 1, bool bias = true,
                                  bool with_relu = true) {
  std::vector<LayerSpec> run{conv2d("c1", in, k, 3, stride, pad, bias)};
  if (with_relu) run.push_back(relu("r1"));
  return run;
}

std::vector<LayerSpec> conv_pool(int64_t in, int64_t out, double p) {
  std::vector<LayerSpec> run{conv2d("c2", in, out, 3, 1, 0, true), relu("r2"), maxpool2d("pool", 2, 2)};
  if (p > 0) run.push_back(dropout("drop1", p));
  run.push_back(flatten("flat"));
  return run;
}

std::vector<LayerSpec> linear_relu(int64_t in, int64_t out, double p) {
  std::vector<LayerSpec> run{linear("fc", in, out, true), relu("r3")};
  if (p > 0) run.push_back(dropout("drop2", p));
  return run;
}

TEST(CudaSmallNet, FirstConvMatchesCpu) {
  SKIP_WITHOUT_GPU();
  check_fused_everywhere(first_conv(32, 1, 0), FusionPath::FirstConv, Shape{6, 1, 28, 28}, "conv1+relu", 11, false);
  // Padding, stride and a channel count that leaves each block many lanes per channel.
  check_fused_everywhere(first_conv(8, 2, 1), FusionPath::FirstConv, Shape{5, 1, 17, 13}, "conv 1->8 s2 p1+relu",
                         12, false);
  // The wrn's stem (no bias, no ReLU: batch norm follows), and RGB with both.
  check_fused_everywhere(first_conv(16, 1, 1, 3, false, false), FusionPath::FirstConv, Shape{4, 3, 32, 32},
                         "stem 3->16 p1", 13, false);
  check_fused_everywhere(first_conv(32, 2, 0, 3), FusionPath::FirstConv, Shape{3, 3, 15, 11}, "conv 3->32 s2+relu", 14,
                         false);
}

TEST(CudaSmallNet, ConvReluPoolDropoutMatchesCpu) {
  SKIP_WITHOUT_GPU();
  check_fused_everywhere(conv_pool(8, 64, 0.25), FusionPath::ConvReluPool, Shape{4, 8, 14, 14}, "conv+relu+pool+drop",
                         21, true);
  // Odd sizes leave a row and a column outside every window; no dropout.
  check_fused_everywhere(conv_pool(4, 16, 0.0), FusionPath::ConvReluPool, Shape{3, 4, 11, 9}, "conv+relu+pool odd", 22,
                         true);
}

TEST(CudaSmallNet, LinearReluDropoutMatchesCpu) {
  SKIP_WITHOUT_GPU();
  check_fused_everywhere(linear_relu(96, 128, 0.5), FusionPath::LinearRelu, Shape{8, 96}, "linear+relu+dropout", 31,
                         true);
  check_fused_everywhere(linear_relu(40, 24, 0.0), FusionPath::LinearRelu, Shape{7, 40}, "linear+relu", 32, true);
}

TEST(CudaSmallNet, GradientsAreRepeatable) {
  SKIP_WITHOUT_GPU();
  check_repeatable(first_conv(32, 1, 0), FusionPath::FirstConv, Shape{64, 1, 28, 28}, false);
  check_repeatable(first_conv(16, 1, 1, 3, false, false), FusionPath::FirstConv, Shape{64, 3, 32, 32}, false);
  check_repeatable(conv_pool(32, 64, 0.25), FusionPath::ConvReluPool, Shape{64, 32, 26, 26}, true);
  check_repeatable(linear_relu(256, 128, 0.5), FusionPath::LinearRelu, Shape{64, 256}, true);
}

// fc1 + ReLU + dropout at mnist-cnn's shape in fp32 and TF32, with the cuBLASLt algorithms autotuned and with
// the heuristic's first (`--autotune off`): both match the CPU layers, and the layer built again in the same
// process gives the same gradient bits (the autotuned choice is the process's, not the layer's).
TEST(CudaSmallNet, LinearReluAtFc1ShapeWithAndWithoutAutotune) {
  SKIP_WITHOUT_GPU();
  const Shape input{64, 9216};
  for (const Precision& p : {kPrecisions[0], kPrecisions[1]})  // fp32, tf32
    for (bool autotune : {true, false}) {
      cuda::ContextOptions o = options_for(p, Layout::NHWC);
      o.autotune = autotune;
      cuda::Context ctx(o);
      const auto run = linear_relu(9216, 128, 0.25);
      const RunResult once = run_fused(run, FusionPath::LinearRelu, input, ctx, 51, cuda::Mode::Train, true);
      const RunResult again = run_fused(run, FusionPath::LinearRelu, input, ctx, 51, cuda::Mode::Train, true);
      const std::string name = label(p, Layout::NHWC, autotune ? "fc1 autotuned" : "fc1 heuristic's first");
      std::printf("[case] %-56s %s\n", name.c_str(), once.e.str().c_str());
      std::fflush(stdout);
      EXPECT_LE(once.e.y, p.tol) << name;
      EXPECT_LE(once.e.dx, block_grad_tolerance(p)) << name;
      EXPECT_LE(once.e.grads, block_grad_tolerance(p)) << name;
      ASSERT_EQ(once.grads.size(), again.grads.size()) << name;
      EXPECT_EQ(std::memcmp(once.grads.data(), again.grads.data(), once.grads.size() * sizeof(float)), 0) << name;
    }
}

// A fused layer on fixed device buffers, its step read from device memory as inside the engine's graph.
class GraphRig {
 public:
  GraphRig(const std::vector<LayerSpec>& run, FusionPath path, const Shape& input, const cuda::ContextOptions& o)
      : ctx_(o), input_(input) {
    const LayerSpec seq = sequential("", run);
    std::mt19937_64 rng(41);
    const std::vector<float> params = case_params(seq, 41, o.compute, rng);
    const std::vector<float> x = normal_values(static_cast<size_t>(input.numel()), rng, o.compute);
    out_ = output_shape(seq, input);
    const std::vector<float> dy = normal_values(static_cast<size_t>(out_.numel()), rng, o.compute);
    np_ = params.size();
    params_.emplace(gputest::to_device(params, DType::F32));
    compute_.emplace(gputest::to_device(params, o.compute));
    grads_.emplace(np_ * 4);
    x_.emplace(gputest::to_device(to_device_order(x, input, o.layout), o.compute));
    dy_.emplace(gputest::to_device(to_device_order(dy, out_, cuda::layout_for(out_, ctx_)), o.compute));
    step_.emplace(gputest::to_device_raw(std::vector<uint64_t>{0}));
    ctx_.set_device_step(step_->as<uint64_t>());
    layer_ = cuda::make_fused_layer(run, path, ctx_);
    cuda::ParamViews views;
    views.params = params_->as<float>();
    views.grads = grads_->as<float>();
    views.compute_params = o.compute == DType::F32 ? params_->get() : compute_->get();
    views.compute = o.compute;
    layer_->bind(views);
    layer_->set_random_stream(17, 0);
  }
  cuda::Context& ctx() { return ctx_; }
  void set_step(uint64_t step) {
    gputest::copy_to_device(step_->get(), &step, sizeof step);
  }
  // Forward and backward, enqueued on the context's stream (or captured from it).
  void enqueue() {
    y_ = &layer_->forward({x_->get(), TensorDesc{input_, ctx_.compute_dtype(), cuda::layout_for(input_, ctx_)}},
                          cuda::Mode::Train);
    ctx_.begin_backward();  // as Network::backward does: the gradient buffers are the same at every call
    layer_->backward({dy_->get(), TensorDesc{out_, ctx_.compute_dtype(), y_->layout()}});
    ctx_.join_weight_gradients();  // as Network::backward does: a capture ends with every stream joined
  }
  std::vector<float> results() {
    ctx_.synchronize();
    std::vector<float> r = from_device(*y_);
    const std::vector<float> g = gputest::download(grads_->get(), np_, DType::F32);
    r.insert(r.end(), g.begin(), g.end());
    return r;
  }

 private:
  cuda::Context ctx_;
  Shape input_, out_;
  size_t np_ = 0;
  std::optional<DeviceMem> params_, compute_, grads_, x_, dy_, step_;
  std::unique_ptr<cuda::Layer> layer_;
  const cuda::DeviceTensor* y_ = nullptr;
};

// Captured in a CUDA graph and replayed, each fused layer gives its eager results bit for bit, and its
// dropout follows the step in device memory (another step, another mask).
TEST(CudaSmallNet, GraphReplayFollowsTheDeviceStep) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<LayerSpec> run;
    FusionPath path;
    Shape input;
    bool drops;
  };
  const Case cases[] = {{first_conv(32, 1, 0), FusionPath::FirstConv, Shape{8, 1, 28, 28}, false},
                        {conv_pool(32, 64, 0.25), FusionPath::ConvReluPool, Shape{8, 32, 26, 26}, true},
                        {linear_relu(256, 128, 0.5), FusionPath::LinearRelu, Shape{8, 256}, true}};
  for (const Case& c : cases)
    for (Layout layout : kLayouts) {
      const std::string name = std::string(fusion_path_name(c.path)) + " " + layout_name(layout);
      GraphRig rig(c.run, c.path, c.input, options_for(kPrecisions[1], layout));  // tf32
      rig.set_step(3);
      rig.enqueue();  // warm-up: cuDNN's autotuning runs its candidates on the first call
      rig.results();
      rig.enqueue();
      const std::vector<float> eager3 = rig.results();
      rig.set_step(4);
      rig.enqueue();
      const std::vector<float> eager4 = rig.results();
      if (c.drops) {
        EXPECT_NE(eager3, eager4) << name << ": another step must draw another mask";
      }

      const cudaStream_t stream = rig.ctx().stream();
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      rig.enqueue();
      ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
      ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      for (uint64_t step : {3, 4}) {
        rig.set_step(step);
        ASSERT_CUDA(cudaGraphLaunch(exec, stream));
        EXPECT_EQ(rig.results(), step == 3 ? eager3 : eager4) << name << " replay at step " << step;
      }
      ASSERT_CUDA(cudaGraphExecDestroy(exec));
      ASSERT_CUDA(cudaGraphDestroy(graph));
    }
}

// mnist-cnn as the engine builds it: the planner puts all three patterns in, and the network still
// computes the CPU network's output and gradients.
TEST(CudaSmallNet, MnistCnnMatchesCpuNetwork) {
  SKIP_WITHOUT_GPU();
  const LayerSpec spec = mnist_cnn(ModelInput{});
  const Shape input{8, 1, 28, 28};
  const uint64_t seed = 99, key = 5, step = 2;
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      cuda::Context ctx(options_for(p, layout));
      cuda::Network gpu(spec, seed, ctx);
      cpu::Network<double> cpu(spec, seed);
      std::vector<float> params = gpu.get_params();
      gputest::quantize(params, p.dtype);
      gpu.set_params(params);
      cpu.params().assign(params.begin(), params.end());
      const std::string report = gpu.fusion_report();
      EXPECT_NE(report.find("conv1 + relu1: "), std::string::npos) << report;
      EXPECT_NE(report.find("conv2 + relu2 + pool + dropout1 + flatten: "), std::string::npos) << report;
      EXPECT_NE(report.find("fc1 + relu3 + dropout2: "), std::string::npos) << report;

      std::mt19937_64 rng(3);
      const std::vector<float> x = normal_values(static_cast<size_t>(input.numel()), rng, p.dtype);
      const std::vector<float> dy = normal_values(80, rng, p.dtype);
      cpu.set_random_stream(key, step);
      gpu.set_random_stream(key, step);
      const Tensor<double> x_host = host_tensor(x, input);  // the CPU layers keep a view of their input for backward
      const Tensor<double>& ref_y = cpu.forward(x_host, cuda::Mode::Train);
      const std::vector<double> ref_y_values = values(ref_y);
      cpu.backward(host_tensor(dy, Shape{8, 10}));
      DeviceMem d_x = gputest::to_device(to_device_order(x, input, layout), p.dtype);
      DeviceMem d_dy = gputest::to_device(dy, p.dtype);
      const cuda::DeviceTensor& y =
          gpu.forward(cuda::DeviceTensor{d_x.get(), TensorDesc{input, p.dtype, layout}}, cuda::Mode::Train);
      const double y_err = rel_error(from_device(y), ref_y_values);
      gpu.backward(cuda::DeviceTensor{d_dy.get(), TensorDesc{Shape{8, 10}, p.dtype, Layout::NCHW}});
      const double g_err = rel_error(gpu.get_grads(), cpu.grads());
      const std::string name = label(p, layout, "mnist-cnn train step");
      std::printf("[case] %-56s y %.3g grads %.3g\n", name.c_str(), y_err, g_err);
      std::fflush(stdout);
      EXPECT_LE(y_err, network_output_tolerance(p)) << name;
      EXPECT_LE(g_err, block_grad_tolerance(p)) << name;
    }
}

}  // namespace
}  // namespace sb::layertest
