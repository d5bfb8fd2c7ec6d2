// BatchNorm2d on the CUDA path (cuDNN graph API NORM_FORWARD training/inference and NORM_BACKWARD)
// against the CPU reference: y, dx, dgamma, dbeta and the running statistics (momentum 0.1, unbiased
// variance), Train and Eval, with and without the fused ReLU, NCHW and NHWC, fp32/bf16/fp16.
#include "test_layers_support.h"

namespace sb::layertest {
namespace {

TEST(CudaBatchNorm2d, TrainForwardBackwardAndRunningStats) {
  SKIP_WITHOUT_GPU();
  check_everywhere({batchnorm2d("bn", 8), Shape{4, 8, 6, 5}}, "bn train", 21);
}

TEST(CudaBatchNorm2d, ManyChannelsLargerImage) {
  SKIP_WITHOUT_GPU();
  check_everywhere({batchnorm2d("bn", 64), Shape{8, 64, 16, 16}}, "bn train c64", 22);
}

TEST(CudaBatchNorm2d, EvalUsesRunningStats) {
  SKIP_WITHOUT_GPU();
  LayerCase c{batchnorm2d("bn", 8), Shape{4, 8, 6, 5}, cuda::Mode::Eval, /*backward=*/false};
  check_everywhere(c, "bn eval", 23);
}

TEST(CudaBatchNorm2d, FusedReluInSequential) {
  SKIP_WITHOUT_GPU();
  const LayerSpec seq = sequential("block", {batchnorm2d("bn", 16), relu("relu")});
  check_everywhere({seq, Shape{4, 16, 8, 8}}, "bn+relu train (fused)", 24);
  check_everywhere({seq, Shape{4, 16, 8, 8}, cuda::Mode::Eval, false}, "bn+relu eval (fused)", 25);
  check_everywhere({seq, Shape{4, 16, 8, 8}}, "bn+relu train (unfused)", 26,
                   [](cuda::ContextOptions& o) { o.fuse_bn_relu = false; });
}

// Which batch-norm graphs found engines (a key without one means the legacy fallback ran).
TEST(CudaBatchNorm2d, ReportsEnginesAndFallback) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      cuda::Context ctx(options_for(p, layout));
      const LayerSpec seq = sequential("block", {batchnorm2d("bn", 16), relu("relu")});
      run_case({seq, Shape{4, 16, 8, 8}}, ctx, 27);
      run_case({seq, Shape{4, 16, 8, 8}, cuda::Mode::Eval, false}, ctx, 28);
      print_plans(ctx, label(p, layout, "bn"));
    }
}

}  // namespace
}  // namespace sb::layertest
