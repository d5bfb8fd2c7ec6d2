// The CUDA wrappers over our kernels against the CPU reference: ReLU, pooling, dropout (the same Philox
// mask), Flatten (PyTorch's C,H,W order under NHWC too), LogSoftmax and the residual container.
#include "test_layers_support.h"

namespace sb::layertest {
namespace {

TEST(CudaSimpleLayers, Relu) {
  SKIP_WITHOUT_GPU();
  check_everywhere({relu("relu"), Shape{3, 5, 7, 6}}, "relu", 41);
}

TEST(CudaSimpleLayers, Pooling) {
  SKIP_WITHOUT_GPU();
  check_everywhere({maxpool2d("pool", 2, 2), Shape{2, 6, 9, 8}}, "maxpool k2 s2", 42);
  check_everywhere({avgpool2d("pool", 3, 2), Shape{2, 6, 9, 8}}, "avgpool k3 s2", 43);
  check_everywhere({global_avgpool("pool"), Shape{4, 10, 5, 5}}, "global avgpool", 44);
}

TEST(CudaSimpleLayers, DropoutSameMaskAsCpu) {
  SKIP_WITHOUT_GPU();
  LayerCase c{dropout("drop", 0.3), Shape{4, 6, 5, 5}};
  c.stream_key = 1234;
  c.step = 7;
  check_everywhere(c, "dropout 4-d p0.3", 45);
  LayerCase flat{dropout("drop", 0.5), Shape{8, 33}};
  flat.stream_key = 99;
  flat.step = 2;
  check_everywhere(flat, "dropout 2-d p0.5", 46);
  check_everywhere({dropout("drop", 0.5), Shape{8, 33}, cuda::Mode::Eval, false}, "dropout eval", 47);
}

// With a device step set on the context (the trainer's CUDA-graph mode), dropout takes its step from
// device memory: the same mask as a host step of that value, and not the host step's own mask.
TEST(CudaSimpleLayers, DropoutReadsTheDeviceStep) {
  SKIP_WITHOUT_GPU();
  const Shape shape{4, 6, 5, 5};
  std::mt19937_64 rng(3);
  const auto x = normal_values(static_cast<size_t>(shape.numel()), rng, DType::F32);
  DeviceMem d_x = gputest::to_device(x, DType::F32);
  DeviceMem d_step = gputest::to_device_raw(std::vector<uint64_t>{7});
  auto run = [&](uint64_t host_step, const uint64_t* device_step) {
    cuda::Context ctx(options_for(kPrecisions[0], Layout::NCHW));
    ctx.set_device_step(device_step);
    auto layer = cuda::make_layer(dropout("drop", 0.4), ctx);
    layer->set_random_stream(42, host_step);
    const auto& y = layer->forward({d_x.get(), TensorDesc{shape, DType::F32, Layout::NCHW}}, cuda::Mode::Train);
    return gputest::download(y.data, x.size(), DType::F32);
  };
  const auto from_device_step = run(0, d_step.as<uint64_t>());
  EXPECT_EQ(from_device_step, run(7, nullptr));
  EXPECT_NE(from_device_step, run(0, nullptr));
}

TEST(CudaSimpleLayers, FlattenKeepsPytorchOrder) {
  SKIP_WITHOUT_GPU();
  check_everywhere({flatten("flat"), Shape{3, 4, 5, 6}}, "flatten 4x5x6", 48);
  check_everywhere({flatten("flat"), Shape{3, 7, 1, 1}}, "flatten 7x1x1", 49);
  // Flatten then Linear: the Linear's weights must mean the same in both layouts.
  check_everywhere({sequential("head", {flatten("flat"), linear("fc", 4 * 3 * 3, 5, true)}), Shape{2, 4, 3, 3}},
                   "flatten+linear", 50);
}

TEST(CudaSimpleLayers, LogSoftmax) {
  SKIP_WITHOUT_GPU();
  check_everywhere({log_softmax("lsm"), Shape{7, 10}}, "log_softmax", 51);
}

TEST(CudaSimpleLayers, ResidualIdentityAndProjection) {
  SKIP_WITHOUT_GPU();
  const LayerSpec identity =
      residual("res", sequential("main", {conv2d("c1", 8, 8, 3, 1, 1, false), batchnorm2d("bn", 8), relu("r")}), {});
  check_everywhere({identity, Shape{2, 8, 6, 6}}, "residual identity", 52);
  const LayerSpec projection = residual("res", sequential("main", {conv2d("c1", 4, 8, 3, 2, 1, false), relu("r")}),
                                        {conv2d("proj", 4, 8, 1, 2, 0, false)});
  check_everywhere({projection, Shape{2, 4, 8, 8}}, "residual projection", 53);
}

}  // namespace
}  // namespace sb::layertest
