// The peak GEMM rate that MFU is relative to (train/engines/cuda/peak_rate.h): the device-side operand fill, the
// measurement, its cache key and the cache in a folder (measured once, then read back bit for bit).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/random_fill.h"
#include "train/engines/cuda/peak_rate.h"
#include "train/engines/peak_rate_cache.h"
#include "unit/scratch_dir.h"

namespace sb {
namespace {

using gputest::DeviceMem;

TEST(RandomFill, ValuesLieInTheRangeAndFollowTheSeed) {
  SKIP_WITHOUT_GPU();
  const int64_t n = 100003;  // odd: no pack size divides it
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    DeviceMem a(static_cast<size_t>(n) * dtype_size(t)), b(static_cast<size_t>(n) * dtype_size(t)),
        c(static_cast<size_t>(n) * dtype_size(t));
    a.poison();
    kernels::fill_uniform(a.get(), t, n, 7, -0.5f, 0.5f, nullptr);
    kernels::fill_uniform(b.get(), t, n, 7, -0.5f, 0.5f, nullptr);
    kernels::fill_uniform(c.get(), t, n, 8, -0.5f, 0.5f, nullptr);
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> va = gputest::download(a.get(), static_cast<size_t>(n), t);
    const std::vector<float> vb = gputest::download(b.get(), static_cast<size_t>(n), t);
    const std::vector<float> vc = gputest::download(c.get(), static_cast<size_t>(n), t);
    double sum = 0;
    size_t same_as_other_seed = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      ASSERT_TRUE(va[i] >= -0.5f && va[i] <= 0.5f) << dtype_name(t) << " [" << i << "] " << va[i];
      ASSERT_EQ(va[i], vb[i]) << dtype_name(t) << " [" << i << "]";
      sum += va[i];
      same_as_other_seed += va[i] == vc[i];
    }
    EXPECT_LT(std::fabs(sum / static_cast<double>(n)), 0.01) << dtype_name(t);  // uniform on [-0.5, 0.5)
    EXPECT_LT(same_as_other_seed, va.size() / 20) << dtype_name(t);
  }
}

TEST(PeakRate, AMeasurementIsAPlausibleRate) {
  SKIP_WITHOUT_GPU();
  const double tflops = measure_gemm_tflops(DType::BF16, false, 2048);
  EXPECT_TRUE(std::isfinite(tflops) && tflops > 1.0 && tflops < 1e5) << tflops;
}

TEST(PeakRate, TheKeyNamesTheCardAndThePrecision) {
  SKIP_WITHOUT_GPU();
  cudaDeviceProp prop{};
  ASSERT_CUDA(cudaGetDeviceProperties(&prop, 0));
  const std::string bf16 = peak_rate_key(0, DType::BF16, false);
  EXPECT_NE(bf16.find(prop.name), std::string::npos) << bf16;
  EXPECT_NE(bf16.find("cublas "), std::string::npos) << bf16;
  EXPECT_NE(bf16, peak_rate_key(0, DType::F16, false));
  EXPECT_NE(peak_rate_key(0, DType::F32, true), peak_rate_key(0, DType::F32, false));
  EXPECT_NE(bf16, peak_rate_key(0, DType::BF16, false, 4096));
  EXPECT_EQ(bf16, peak_rate_key(0, DType::BF16, false));
}

class PeakRateCacheOnGpu : public test::ScratchDirTest {};

TEST_F(PeakRateCacheOnGpu, MeasuredOnceThenReadFromTheCacheFolder) {
  SKIP_WITHOUT_GPU();
  ASSERT_CUDA(cudaSetDevice(0));
  const double first = peak_gemm_tflops(0, DType::BF16, false, dir_.string());
  ASSERT_TRUE(std::isfinite(first) && first > 0) << first;
  const PeakRateCache cache(dir_.string(), peak_rate_key(0, DType::BF16, false));
  ASSERT_TRUE(std::filesystem::exists(cache.path())) << cache.path();
  // A second measurement would differ in its last bits: the same value means the file was read.
  EXPECT_EQ(peak_gemm_tflops(0, DType::BF16, false, dir_.string()), first);
  cache.write(first * 0.5);
  EXPECT_EQ(peak_gemm_tflops(0, DType::BF16, false, dir_.string()), first * 0.5);
  // No folder (--no-plan-cache): measured, nothing written.
  const double uncached = peak_gemm_tflops(0, DType::BF16, false, "");
  EXPECT_TRUE(std::isfinite(uncached) && uncached > 0) << uncached;
  EXPECT_NE(uncached, first * 0.5);
}

}  // namespace
}  // namespace sb
