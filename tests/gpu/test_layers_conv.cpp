// Conv2d on the CUDA path (cuDNN graph API: fprop, dgrad, wgrad) against the CPU reference, in fp32 (TF32
// off), TF32, bf16 and fp16, NCHW and NHWC: stride, padding, bias, 1x1 and 3x3 kernels; and the fused
// conv+bias graph where an engine runs it.
#include "test_layers_support.h"

namespace sb::layertest {
namespace {

TEST(CudaConv2d, ThreeByThreeWithBias) {
  SKIP_WITHOUT_GPU();
  check_everywhere({conv2d("conv", 3, 8, 3, 1, 1, true), Shape{4, 3, 12, 12}}, "conv 3->8 k3 s1 p1 bias", 11);
}

TEST(CudaConv2d, StridedWithoutBias) {
  SKIP_WITHOUT_GPU();
  check_everywhere({conv2d("conv", 8, 16, 3, 2, 1, false), Shape{3, 8, 11, 9}}, "conv 8->16 k3 s2 p1", 12);
}

TEST(CudaConv2d, PointwiseWithBias) {
  SKIP_WITHOUT_GPU();
  check_everywhere({conv2d("conv", 16, 24, 1, 1, 0, true), Shape{2, 16, 7, 7}}, "conv 16->24 k1", 13);
}

TEST(CudaConv2d, FiveByFiveNoPadding) {
  SKIP_WITHOUT_GPU();
  check_everywhere({conv2d("conv", 1, 32, 5, 1, 0, true), Shape{8, 1, 28, 28}}, "conv 1->32 k5 p0 bias", 14);
}

TEST(CudaConv2d, FusedBiasGraphMatchesToo) {
  SKIP_WITHOUT_GPU();
  check_everywhere({conv2d("conv", 8, 16, 3, 1, 1, true), Shape{4, 8, 10, 10}}, "conv 8->16 k3 bias, fused",
                   15, [](cuda::ContextOptions& o) { o.fuse_conv_bias = true; });
  // Whether the fused graph found an engine, per precision and layout (the unfused path stands in).
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      cuda::ContextOptions o = options_for(p, layout);
      o.fuse_conv_bias = true;
      cuda::Context ctx(o);
      run_case({conv2d("conv", 8, 16, 3, 1, 1, true), Shape{4, 8, 10, 10}}, ctx, 16);
      print_plans(ctx, label(p, layout, "fused conv+bias"));
    }
}

}  // namespace
}  // namespace sb::layertest
