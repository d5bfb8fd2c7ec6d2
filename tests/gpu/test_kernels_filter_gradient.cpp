// The one-pass KRSC -> KCRS fp32 filter gradient (krsc_to_kcrs_f32, kernels/elementwise.h) against the two
// kernels it replaces (transpose, then widen into fp32) and a host transpose, bit for bit: widening is
// exact, so nothing may differ.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "kernels/elementwise.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct FilterShape {
  int64_t k, c, r, s;
};

// Thin matrices (fewer taps or channels than a 32-wide tile: one thread per element), among them 1x1
// filters and more channels than a tile, and tiled ones (both sides at least a tile) with ragged edges.
const FilterShape kShapes[] = {{16, 8, 3, 3}, {3, 5, 1, 1}, {64, 33, 3, 3}, {40, 70, 5, 5}, {2, 1, 7, 7},
                               {4, 40, 7, 7}, {2, 64, 6, 6}, {3, 96, 11, 11}};

TEST(KernelsFilterGradient, TransposeWidenEqualsTwoKernelsAndHost) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (const FilterShape& f : kShapes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " k" + std::to_string(f.k) + " c" + std::to_string(f.c) + " " +
                   std::to_string(f.r) + "x" + std::to_string(f.s));
      const int64_t n = f.k * f.c * f.r * f.s;
      std::vector<float> krsc = random_values(static_cast<size_t>(n), rng);
      quantize(krsc, t);
      const DeviceMem src = to_device(krsc, t);
      DeviceMem one_pass(static_cast<size_t>(n) * sizeof(float)), kcrs(static_cast<size_t>(n) * dtype_size(t)),
          two_pass(static_cast<size_t>(n) * sizeof(float));
      one_pass.poison();
      two_pass.poison();
      kernels::krsc_to_kcrs_f32(src.get(), t, one_pass.as<float>(), f.k, f.c, f.r, f.s, nullptr);
      kernels::nhwc_to_nchw(src.get(), kcrs.get(), f.k, f.c, f.r, f.s, t, nullptr);
      kernels::accumulate_into_f32(kcrs.get(), t, two_pass.as<float>(), n, /*accumulate=*/false, nullptr);
      ASSERT_CUDA(cudaDeviceSynchronize());
      const std::vector<float> got = download(one_pass.get(), static_cast<size_t>(n), DType::F32);
      const std::vector<float> want = download(two_pass.get(), static_cast<size_t>(n), DType::F32);
      const std::vector<float> host = nhwc_to_nchw(krsc, f.k, f.c, f.r, f.s);
      ASSERT_EQ(got.size(), host.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << "element " << i;
        ASSERT_EQ(got[i], host[i]) << "element " << i;
      }
    }
}

}  // namespace
