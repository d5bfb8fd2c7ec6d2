// Timings of the fused batch-norm runs against their separate twins (fused_bn_kernels off: cuDNN's BN+ReLU
// graph, the dropout and add kernels) on the Wide ResNet's 160-channel 32x32 layer (batch 256, bf16,
// NHWC), forward + backward of one training step: [BN, ReLU, Dropout], [BN, ReLU] + the residual add, and
// the plain [BN, ReLU] of the stem, which the planner keeps fused only if it is the faster
// (FusionAvailability::fuse_plain_bn_relu). The numbers behind docs/kernels.md; only with SB_TIMING=1.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "test_layers_support.h"

namespace sb::layertest {
namespace {

// One layer tree bound to device buffers, stepped forward + backward in Train mode.
class TimedTree {
 public:
  TimedTree(const LayerSpec& spec, const Shape& input, bool fused)
      : TimedTree(spec, input, fused, HostValues(spec, input)) {}

  void step() {
    const cuda::DeviceTensor& y = layer_->forward({x_.get(), TensorDesc{input_, DType::BF16, Layout::NHWC}},
                                                  cuda::Mode::Train);
    y_ = &y;
    dx_ = &layer_->backward({dy_.get(), y.desc});
  }

  // Median milliseconds of one step over `runs`, after two warm-up steps.
  float median_ms(int runs = 20) {
    step();
    step();
    cudaEvent_t start, stop;
    EXPECT_EQ(cudaEventCreate(&start), cudaSuccess);
    EXPECT_EQ(cudaEventCreate(&stop), cudaSuccess);
    std::vector<float> ms;
    for (int i = 0; i < runs; ++i) {
      cudaEventRecord(start, ctx_.stream());
      step();
      cudaEventRecord(stop, ctx_.stream());
      EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
      float t = 0;
      cudaEventElapsedTime(&t, start, stop);
      ms.push_back(t);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::nth_element(ms.begin(), ms.begin() + runs / 2, ms.end());
    return ms[static_cast<size_t>(runs / 2)];
  }

  std::vector<float> y() const { return from_device(*y_); }
  std::vector<float> dx() const { return from_device(*dx_); }

 private:
  struct HostValues {
    std::vector<float> params, buffers, x, dy;
    HostValues(const LayerSpec& spec, const Shape& input) {
      std::mt19937_64 rng(5);
      params = case_params(spec, 5, DType::BF16, rng);
      buffers = case_buffers(spec, rng);
      x = normal_values(static_cast<size_t>(input.numel()), rng, DType::BF16);
      dy = normal_values(static_cast<size_t>(input.numel()), rng, DType::BF16);
    }
  };
  TimedTree(const LayerSpec& spec, const Shape& input, bool fused, const HostValues& h)
      : ctx_(options(fused)),
        layer_(cuda::make_layer(spec, ctx_)),
        input_(input),
        params_(gputest::to_device(h.params, DType::F32)),
        compute_(gputest::to_device(h.params, DType::BF16)),
        grads_(h.params.size() * 4),
        buffers_(gputest::to_device(h.buffers, DType::F32)),
        x_(gputest::to_device(h.x, DType::BF16)),
        dy_(gputest::to_device(h.dy, DType::BF16)) {
    cuda::ParamViews v;
    v.params = params_.as<float>();
    v.grads = grads_.as<float>();
    v.compute_params = compute_.get();
    v.buffers = buffers_.as<float>();
    v.compute = DType::BF16;
    layer_->bind(v);
    layer_->set_random_stream(1, 1);
  }

  static cuda::ContextOptions options(bool fused) {
    cuda::ContextOptions o;
    o.compute = DType::BF16;
    o.layout = Layout::NHWC;
    o.fused_bn_kernels = fused;
    return o;
  }
  cuda::Context ctx_;
  std::unique_ptr<cuda::Layer> layer_;
  Shape input_;
  DeviceMem params_, compute_, grads_, buffers_, x_, dy_;
  const cuda::DeviceTensor *y_ = nullptr, *dx_ = nullptr;
};

TEST(CudaTimingFusedBn, WrnLayerFusedAgainstSeparate) {
  SKIP_WITHOUT_GPU();
  const char* enabled = std::getenv("SB_TIMING");
  if (!enabled || std::string(enabled) != "1") GTEST_SKIP() << "set SB_TIMING=1";
  const int64_t c = 160;
  const Shape shape{256, c, 32, 32};
  struct Pattern {
    const char* name;
    LayerSpec spec;
  };
  const Pattern patterns[] = {
      {"bn+relu+dropout", sequential("r", {batchnorm2d("r.bn", c), relu("r.relu"), dropout("r.drop", 0.3)})},
      {"bn+relu+add", residual("r", sequential("r.main", {batchnorm2d("r.bn", c), relu("r.relu")}), {})},
      {"bn+relu (stem)", sequential("r", {batchnorm2d("r.bn", c), relu("r.relu")})},
  };
  for (const Pattern& p : patterns) {
    TimedTree fused(p.spec, shape, true), separate(p.spec, shape, false);
    const float f = fused.median_ms(), s = separate.median_ms();
    std::printf("[timing] %-18s fused %.3f ms  separate %.3f ms  (%.2fx)\n", p.name, f, s, s / f);
    std::fflush(stdout);
    EXPECT_LE(gputest::rel_l2(fused.y(), separate.y()), 2e-2) << p.name;
    EXPECT_LE(gputest::rel_l2(fused.dx(), separate.dx()), 2e-2) << p.name;
  }
}

}  // namespace
}  // namespace sb::layertest
