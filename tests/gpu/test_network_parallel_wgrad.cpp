// The weight-gradient stream (ContextOptions::parallel_wgrad) at the network level: a conv net with batch
// norm, a residual block with a projection shortcut and a Linear gives bit for bit the gradients (and the
// input gradient) of the one-stream network, under deterministic cuDNN engines and the heuristics' first
// choice (autotune off, so both pick the same engines), in fp32, TF32 and bf16 and both layouts, eagerly and
// replayed from a CUDA graph of forward and backward (the capture fails unless backward joined the
// forked stream back). A layer alone leaves its weight gradient forked until the context joins it.
#include "test_layers_support.h"

#include <cstring>
#include <memory>
#include <optional>

#include "nn/cuda/conv2d.h"
#include "nn/cuda/network.h"

namespace sb::layertest {
namespace {

LayerSpec wgrad_net() {
  return sequential("", {conv2d("conv1", 3, 8, 3, 1, 1, true), batchnorm2d("bn1", 8), relu("relu1"),
                         maxpool2d("pool1", 2, 2),
                         residual("block", sequential("main", {conv2d("c1", 8, 16, 3, 2, 1, false), batchnorm2d("bn", 16),
                                                               relu("relu"), conv2d("c2", 16, 16, 3, 1, 1, true)}),
                                  {conv2d("proj", 8, 16, 1, 2, 0, false)}),
                         relu("relu2"), flatten("flat"), linear("fc1", 16 * 4 * 4, 32, true), relu("relu3"),
                         linear("fc2", 32, 10, true)});
}

const Shape kInput{6, 3, 16, 16}, kOutput{6, 10};
constexpr uint64_t kSeed = 31;

struct NetRun {
  cuda::Context ctx;
  cuda::Network net;
  std::optional<DeviceMem> x, dy;

  NetRun(const cuda::ContextOptions& o, const std::vector<float>& x_host, const std::vector<float>& dy_host)
      : ctx(o), net(wgrad_net(), kSeed, ctx, cuda::NetworkOutput::AsSpecified, cuda::InputGradient::Compute) {
    x.emplace(gputest::to_device(to_device_order(x_host, kInput, o.layout), o.compute));
    dy.emplace(gputest::to_device(dy_host, o.compute));
  }
  cuda::DeviceTensor input() const { return {x->get(), TensorDesc{kInput, ctx.compute_dtype(), ctx.layout()}}; }
  cuda::DeviceTensor grad_output() const { return {dy->get(), TensorDesc{kOutput, ctx.compute_dtype(), Layout::NCHW}}; }
  // One forward and backward; the parameter gradients and the input gradient.
  std::pair<std::vector<float>, std::vector<float>> step() {
    net.forward(input(), cuda::Mode::Train);
    const cuda::DeviceTensor& dx = net.backward(grad_output());
    return {net.get_grads(), from_device(dx)};
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

cuda::ContextOptions deterministic_options(const Precision& p, Layout layout, bool parallel_wgrad) {
  cuda::ContextOptions o = options_for(p, layout);
  o.deterministic = true;
  o.autotune = false;
  o.parallel_wgrad = parallel_wgrad;
  return o;
}

TEST(NetworkParallelWgrad, GradientsEqualOneStreamEagerAndReplayed) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : {kPrecisions[0], kPrecisions[1], kPrecisions[2]})
    for (Layout layout : kLayouts) {
      const std::string name = label(p, layout, "wgrad net");
      std::mt19937_64 rng(6);
      const std::vector<float> x = normal_values(static_cast<size_t>(kInput.numel()), rng, p.dtype);
      const std::vector<float> dy = normal_values(static_cast<size_t>(kOutput.numel()), rng, p.dtype);
      NetRun off(deterministic_options(p, layout, false), x, dy), on(deterministic_options(p, layout, true), x, dy);
      const auto [want_g, want_dx] = off.step();
      const auto [eager_g, eager_dx] = on.step();
      EXPECT_TRUE(same_bits(eager_g, want_g)) << name << ": gradients, eager";
      EXPECT_TRUE(same_bits(eager_dx, want_dx)) << name << ": input gradient, eager";
      EXPECT_FALSE(on.ctx.weight_gradient_forked()) << name << ": backward left the weight-gradient stream forked";

      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      ASSERT_CUDA(cudaStreamBeginCapture(on.ctx.stream(), cudaStreamCaptureModeThreadLocal));
      on.net.forward(on.input(), cuda::Mode::Train);
      const cuda::DeviceTensor& dx = on.net.backward(on.grad_output());
      ASSERT_CUDA(cudaStreamEndCapture(on.ctx.stream(), &graph));
      ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      ASSERT_CUDA(cudaMemset(on.net.grads(), 0xFF, static_cast<size_t>(on.net.param_count()) * sizeof(float)));
      ASSERT_CUDA(cudaGraphLaunch(exec, on.ctx.stream()));
      ASSERT_CUDA(cudaStreamSynchronize(on.ctx.stream()));
      EXPECT_TRUE(same_bits(on.net.get_grads(), want_g)) << name << ": gradients, replayed";
      EXPECT_TRUE(same_bits(from_device(dx), want_dx)) << name << ": input gradient, replayed";
      ASSERT_CUDA(cudaGraphExecDestroy(exec));
      ASSERT_CUDA(cudaGraphDestroy(graph));
    }
}

// Conv2d's backward forks its weight gradient and leaves it to the caller to join; with the option off, or
// while a layer timer times layers one by one, everything stays on the compute stream.
TEST(NetworkParallelWgrad, ALayerForksItsWeightGradientUntilJoined) {
  SKIP_WITHOUT_GPU();
  for (bool parallel : {true, false}) {
    cuda::Context ctx(deterministic_options(kPrecisions[0], Layout::NCHW, parallel));
    const LayerSpec spec = conv2d("c", 4, 8, 3, 1, 1, true);
    const std::vector<ParamSpec> params = collect_params(spec);
    const int64_t n = count_elements(params);
    DeviceMem w(static_cast<size_t>(n) * sizeof(float)), g(static_cast<size_t>(n) * sizeof(float));
    ASSERT_CUDA(cudaMemset(w.get(), 0, w.bytes()));
    cuda::ParamViews views;
    views.params = w.as<float>();
    views.grads = g.as<float>();
    views.compute_params = w.get();
    views.compute = DType::F32;
    cuda::Conv2d conv(spec, ctx);
    conv.bind(views);
    std::mt19937_64 rng(2);
    const Shape in{2, 4, 6, 6}, out{2, 8, 6, 6};
    DeviceMem x = gputest::to_device(normal_values(static_cast<size_t>(in.numel()), rng, DType::F32), DType::F32);
    DeviceMem dy = gputest::to_device(normal_values(static_cast<size_t>(out.numel()), rng, DType::F32), DType::F32);
    conv.forward({x.get(), TensorDesc{in, DType::F32, Layout::NCHW}}, cuda::Mode::Train);
    conv.backward({dy.get(), TensorDesc{out, DType::F32, Layout::NCHW}});
    EXPECT_EQ(ctx.weight_gradient_forked(), parallel) << "parallel_wgrad " << parallel;
    ctx.join_weight_gradients();
    EXPECT_FALSE(ctx.weight_gradient_forked());
    ctx.synchronize();

    cuda::LayerTimer timer;
    ctx.set_layer_timer(&timer);
    EXPECT_EQ(ctx.begin_weight_gradient(), ctx.stream()) << "a timed layer must run on the compute stream";
    EXPECT_FALSE(ctx.weight_gradient_forked());
    ctx.set_layer_timer(nullptr);
  }
}

}  // namespace
}  // namespace sb::layertest
