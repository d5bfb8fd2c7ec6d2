// Loss-scaling kernels against host loops: check_finite over each dtype, unscale_and_check, and the
// GradScaler state machine of update_loss_scale (backoff, growth after the interval, the flag cleared).
#include <gtest/gtest.h>

#include <limits>

#include "gpu_test_util.h"
#include "kernels/amp.h"

namespace {

using namespace sb;
using namespace sb::gputest;

TEST(KernelsAmp, CheckFiniteFindsInfAndNanAnywhere) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(51);
  const int64_t n = 70001;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int64_t at : {int64_t{-1}, int64_t{0}, int64_t{12345}, n - 1})
      for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " at " + std::to_string(at) + " " + std::to_string(bad));
        std::vector<float> x = random_values(n, rng);
        if (at >= 0) x[at] = bad;
        DeviceMem dx = to_device(x, t), flag(4);
        cudaMemset(flag.get(), 0, 4);
        kernels::check_finite(dx.get(), n, t, flag.as<int32_t>(), nullptr);
        EXPECT_EQ(download_raw<int32_t>(flag.get(), 1)[0], at >= 0 ? 1 : 0);
      }
}

TEST(KernelsAmp, UnscaleAndCheck) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(52);
  for (int64_t n : {int64_t{1}, int64_t{4097}, int64_t{100000}}) {
    std::vector<float> g = random_values(n, rng, 1.0f, 60000.0f);
    const float scale = 32768.0f;
    const float inv = static_cast<float>(1.0 / static_cast<double>(scale));
    std::vector<float> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = g[i] * inv;
    DeviceMem dg = to_device(g, DType::F32), ds = to_device(std::vector<float>{scale}, DType::F32), flag(4);
    cudaMemset(flag.get(), 0, 4);
    kernels::unscale_and_check(dg.as<float>(), n, ds.as<float>(), flag.as<int32_t>(), nullptr);
    EXPECT_TRUE(all_close(download(dg.get(), n, DType::F32), want, 0.0));
    EXPECT_EQ(download_raw<int32_t>(flag.get(), 1)[0], 0);
    g[n / 2] = std::numeric_limits<float>::infinity();
    upload(g, DType::F32, dg.get());
    kernels::unscale_and_check(dg.as<float>(), n, ds.as<float>(), flag.as<int32_t>(), nullptr);
    EXPECT_EQ(download_raw<int32_t>(flag.get(), 1)[0], 1);
  }
}

TEST(KernelsAmp, UpdateLossScaleFollowsGradScaler) {
  SKIP_WITHOUT_GPU();
  DeviceMem ds(sizeof(kernels::LossScaleState));
  kernels::LossScaleState host{65536.0f, 0, 0};
  copy_to_device(ds.get(), &host, sizeof(host));
  auto state = [&]() { return download_raw<kernels::LossScaleState>(ds.get(), 1)[0]; };
  auto set_inf = [&]() {
    const int32_t one = 1;
    copy_to_device(static_cast<char*>(ds.get()) + offsetof(kernels::LossScaleState, found_inf), &one, 4);
  };
  const int interval = 3;
  auto* s = ds.as<kernels::LossScaleState>();
  set_inf();
  kernels::update_loss_scale(s, 2.0f, 0.5f, interval, nullptr);  // backoff
  EXPECT_EQ(state().scale, 32768.0f);
  EXPECT_EQ(state().growth_tracker, 0);
  EXPECT_EQ(state().found_inf, 0);
  kernels::update_loss_scale(s, 2.0f, 0.5f, interval, nullptr);
  kernels::update_loss_scale(s, 2.0f, 0.5f, interval, nullptr);
  EXPECT_EQ(state().scale, 32768.0f);
  EXPECT_EQ(state().growth_tracker, 2);
  kernels::update_loss_scale(s, 2.0f, 0.5f, interval, nullptr);  // third clean step: growth
  EXPECT_EQ(state().scale, 65536.0f);
  EXPECT_EQ(state().growth_tracker, 0);
  kernels::update_loss_scale(s, 2.0f, 0.5f, interval, nullptr);
  set_inf();
  kernels::update_loss_scale(s, 2.0f, 0.5f, interval, nullptr);  // an overflow resets the tracker
  EXPECT_EQ(state().scale, 32768.0f);
  EXPECT_EQ(state().growth_tracker, 0);
}

}  // namespace
