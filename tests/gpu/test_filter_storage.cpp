// The CUDA network's filter storage (nn/filter_order.h): under NHWC the device buffers hold every filter
// K, R, S, C (cuDNN's order for NHWC data, so no pass transposes it per step), under NCHW [K, C, R, S]; the
// host sees the spec's order either way: the parameters, their gradients and the optimizer's state
// (checkpoints) round-trip, and a network of each layout computes the same gradients from the same weights.
#include "test_layers_support.h"

#include "nn/cuda/network.h"
#include "nn/filter_order.h"
#include "train/engines/cuda/device_optimizer.h"

namespace sb::layertest {
namespace {

LayerSpec filter_net() {
  return sequential("", {conv2d("conv1", 3, 8, 3, 1, 1, true), relu("relu1"), conv2d("conv2", 8, 16, 3, 1, 1, false),
                         conv2d("proj", 16, 8, 1, 1, 0, false), flatten("flat"), linear("fc", 8 * 6 * 6, 10, true)});
}

const Shape kInput{4, 3, 6, 6};

std::vector<float> raw(const float* device, int64_t n) {
  return gputest::download(device, static_cast<size_t>(n), DType::F32);
}

TEST(FilterStorage, NhwcStoresFiltersKrscAndTheHostSeesTheSpecOrder) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : kLayouts) {
    SCOPED_TRACE(layout_name(layout));
    cuda::Context ctx(options_for(kPrecisions[0], layout));
    cuda::Network net(filter_net(), 5, ctx);
    EXPECT_EQ(net.stored_filters().size(), layout == Layout::NHWC ? 2u : 0u);  // conv1, conv2; not the 1x1
    std::mt19937_64 rng(3);
    std::vector<float> p = gputest::random_values(static_cast<size_t>(net.param_count()), rng);
    net.set_params(p);
    EXPECT_EQ(net.get_params(), p);
    std::vector<float> stored = p;
    filters_to_krsc(net.stored_filters(), stored);
    EXPECT_EQ(raw(net.params(), net.param_count()), stored);
    if (layout == Layout::NHWC) {
      EXPECT_NE(stored, p);
    }
  }
}

TEST(FilterStorage, BothLayoutsComputeTheSameGradientsFromTheSameWeights) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(8);
  const std::vector<float> x = gputest::random_values(static_cast<size_t>(kInput.numel()), rng);
  const std::vector<float> dy = gputest::random_values(40, rng);
  std::vector<float> grads[2], params;
  for (int l = 0; l < 2; ++l) {
    const Layout layout = kLayouts[l];
    cuda::Context ctx(options_for(kPrecisions[0], layout));  // fp32 without TF32: layouts agree to rounding
    cuda::Network net(filter_net(), 5, ctx);
    if (params.empty()) params = net.get_params();
    net.set_params(params);
    DeviceMem d_x = gputest::to_device(to_device_order(x, kInput, layout), DType::F32), d_dy = gputest::to_device(dy, DType::F32);
    net.forward({d_x.get(), TensorDesc{kInput, DType::F32, layout}}, cuda::Mode::Train);
    net.backward({d_dy.get(), TensorDesc{Shape{4, 10}, DType::F32, Layout::NCHW}});
    ctx.synchronize();
    grads[l] = net.get_grads();
  }
  EXPECT_LE(rel_error(grads[1], std::vector<double>(grads[0].begin(), grads[0].end())), 1e-5);
}

TEST(FilterStorage, OptimizerStateRoundTripsInTheSpecOrder) {
  SKIP_WITHOUT_GPU();
  cuda::Context ctx(options_for(kPrecisions[0], Layout::NHWC));
  cuda::Network net(filter_net(), 5, ctx);
  OptimizerSpec spec;
  spec.kind = OptimizerKind::Sgd;
  spec.lr = 0.1;
  spec.momentum = 0.9;
  const double lr = 0.1;
  DeviceMem d_lr = gputest::to_device_raw(std::vector<double>{lr});
  cuda::DeviceOptimizer opt(spec, net, DType::F32, static_cast<const double*>(d_lr.get()), nullptr, ctx.stream());
  EngineState st;
  std::mt19937_64 rng(4);
  st.optimizer_state.emplace_back("momentum_buffer", gputest::random_values(static_cast<size_t>(net.param_count()), rng));
  st.optimizer_steps = 7;
  opt.load(st, "sgd");
  EngineState back;
  opt.save(back);
  ASSERT_EQ(back.optimizer_state.size(), 1u);
  EXPECT_EQ(back.optimizer_state[0].second, st.optimizer_state[0].second);
  EXPECT_EQ(back.optimizer_steps, 7);
}

}  // namespace
}  // namespace sb::layertest
