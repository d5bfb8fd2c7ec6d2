// The fused optimizer kernel against the CPU optimizers of src/optim/ (Sgd, Adadelta, Adam/AdamW with
// and without AMSGrad): several steps with a changing learning rate, the lr and the step number either
// passed by value or read from device memory (the CUDA-graph mode), the found_inf skip, the fused
// unscale, and the low-precision weight copy; vector and scalar (misaligned) paths. Launches over element
// ranges (one per gradient bucket) give the bits of one whole launch, with each range's gradients at their
// place in the buffer or in a buffer of their own (range_grads), and the step counter advances once per
// step, by the launch flagged for it, while every range reads the same step number.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "gpu_test_util.h"
#include "kernels/optimizer.h"
#include "optim/adadelta.h"
#include "optim/adam.h"
#include "optim/cuda/fused_step_hyperparameters.h"
#include "optim/sgd.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct Variant {
  std::string name;
  kernels::OptimizerKind kind;
  std::function<std::unique_ptr<Optimizer>(int64_t)> make_cpu;
  SgdConfig sgd;
  AdadeltaConfig adadelta;
  AdamConfig adam;
  double lr;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  auto sgd = [&](std::string name, SgdConfig c, double lr) {
    Variant x{name, kernels::OptimizerKind::Sgd, [c](int64_t n) { return std::make_unique<Sgd>(n, c); }, c, {}, {}, lr};
    v.push_back(x);
  };
  sgd("sgd", SgdConfig{0.0, 0.0, false, 0.0}, 0.1);
  sgd("sgd-wd", SgdConfig{0.0, 0.0, false, 5e-4}, 0.1);
  sgd("sgd-momentum", SgdConfig{0.9, 0.0, false, 5e-4}, 0.1);
  sgd("sgd-dampening", SgdConfig{0.9, 0.1, false, 0.0}, 0.05);
  sgd("sgd-nesterov", SgdConfig{0.9, 0.0, true, 5e-4}, 0.1);
  AdadeltaConfig ad;
  v.push_back(Variant{"adadelta", kernels::OptimizerKind::Adadelta,
                      [ad](int64_t n) { return std::make_unique<Adadelta>(n, ad); }, {}, ad, {}, 1.0});
  AdadeltaConfig ad_wd;
  ad_wd.weight_decay = 1e-2;
  v.push_back(Variant{"adadelta-wd", kernels::OptimizerKind::Adadelta,
                      [ad_wd](int64_t n) { return std::make_unique<Adadelta>(n, ad_wd); }, {}, ad_wd, {}, 0.5});
  auto adam = [&](std::string name, AdamConfig c, double lr) {
    v.push_back(Variant{name, kernels::OptimizerKind::Adam, [c](int64_t n) { return std::make_unique<Adam>(n, c); }, {},
                        {}, c, lr});
  };
  AdamConfig a;
  adam("adam", a, 1e-3);
  a.weight_decay = 1e-2;
  adam("adam-l2", a, 1e-3);
  adam("adamw", adamw_config(), 1e-3);
  AdamConfig ams = adamw_config();
  ams.amsgrad = true;
  adam("adamw-amsgrad", ams, 2e-3);
  return v;
}

int state_count(const Variant& v) {
  switch (v.kind) {
    case kernels::OptimizerKind::Sgd: return v.sgd.momentum != 0.0 ? 1 : 0;
    case kernels::OptimizerKind::Adadelta: return 2;
    case kernels::OptimizerKind::Adam: return v.adam.amsgrad ? 3 : 2;
  }
  return 0;
}

TEST(KernelsOptimizer, FusedStepMatchesCpuOptimizers) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(41);
  const int kSteps = 5;
  for (const Variant& v : variants())
    for (bool device_scalars : {false, true})
      for (int shift : {0, 1}) {
        const int64_t n = shift ? 1001 : 40003;  // ragged tails on both paths
        SCOPED_TRACE(v.name + (device_scalars ? " lr/step on device" : " lr/step by value") + " shift " +
                     std::to_string(shift));
        std::vector<float> params = random_values(n, rng, 0.01f, 1.0f);
        auto cpu = v.make_cpu(n);
        const int states = state_count(v);

        // Device buffers, each offset by `shift` floats.
        auto alloc = [&](const std::vector<float>& init) {
          DeviceMem m((n + 4) * 4);
          upload(init, DType::F32, m.as<float>() + shift);
          return m;
        };
        DeviceMem dp = alloc(params), dg((n + 4) * 4);
        std::vector<DeviceMem> ds;
        for (int k = 0; k < states; ++k) ds.push_back(alloc(std::vector<float>(n, 0.0f)));
        DeviceMem dcopy((n + 8) * 2);
        DeviceMem dlr(sizeof(double)), dcounter(sizeof(kernels::OptimizerStepCounter));
        cudaMemset(dcounter.get(), 0, sizeof(kernels::OptimizerStepCounter));

        for (int step = 1; step <= kSteps; ++step) {
          const double lr = v.lr * (1.0 - 0.1 * step);  // a schedule: lr changes every step
          const std::vector<float> grads = random_values(n, rng, 1e-3f, 1.0f);
          cpu->step(params.data(), grads.data(), lr);

          upload(grads, DType::F32, dg.as<float>() + shift);
          dcopy.poison();
          kernels::FusedOptimizerArgs a;
          a.kind = v.kind;
          a.sgd = fused_step_hyperparameters(v.sgd);
          a.adadelta = fused_step_hyperparameters(v.adadelta);
          a.adam = fused_step_hyperparameters(v.adam);
          a.n = n;
          a.params = dp.as<float>() + shift;
          a.grads = dg.as<float>() + shift;
          for (int k = 0; k < states; ++k) a.state[k] = ds[k].as<float>() + shift;
          if (device_scalars) {
            copy_to_device(dlr.get(), &lr, sizeof(double));
            a.lr_device = dlr.as<double>();
            a.step_counter = dcounter.as<kernels::OptimizerStepCounter>();
            a.lr = -1.0;  // must be ignored
            a.step = -7;
          } else {
            a.lr = lr;
            a.step = step;
          }
          a.params_copy = static_cast<uint16_t*>(dcopy.get()) + shift;
          a.copy_dtype = step % 2 ? DType::BF16 : DType::F16;
          kernels::fused_optimizer_step(a, nullptr);

          const std::vector<float> got = download(a.params, n, DType::F32);
          // Same formulas in the same order, compiled without FMA contraction (cmake/CudaBackend.cmake), but
          // the host compiler may contract and the device's sqrt and division differ in the last bit, and the
          // updates cancel (p - lr*d, beta*m + (1-beta)*g with signed g): element errors are judged against
          // the tensor's scale.
          EXPECT_TRUE(all_close(got, params, 1e-5, max_abs(params))) << "step " << step;
          EXPECT_LE(rel_l2(got, params), 1e-6) << "step " << step;
          std::vector<float> copy_want = got;
          quantize(copy_want, a.copy_dtype);
          EXPECT_TRUE(all_close(download(a.params_copy, n, a.copy_dtype), copy_want, 0.0)) << "copy, step " << step;
          const std::vector<NamedState> cpu_state = cpu->state();
          ASSERT_EQ(static_cast<int>(cpu_state.size()), states);
          for (int k = 0; k < states; ++k) {
            std::vector<float> want(cpu_state[k].data, cpu_state[k].data + n);
            const std::vector<float> state = download(a.state[k], n, DType::F32);
            EXPECT_TRUE(all_close(state, want, 1e-5, max_abs(want))) << cpu_state[k].name << ", step " << step;
            EXPECT_LE(rel_l2(state, want), 1e-6) << cpu_state[k].name << ", step " << step;
          }
        }
        if (device_scalars) {
          EXPECT_EQ(download_raw<kernels::OptimizerStepCounter>(dcounter.get(), 1)[0].steps, kSteps);
        }
      }
}

// One optimizer's buffers on the device (params, grads, state, bf16 copy, lr, step counter) from the same
// initial values, so that two of them can run the same steps launched differently.
struct OptimizerBuffers {
  OptimizerBuffers(const Variant& v, const std::vector<float>& params, double lr)
      : dp(to_device(params, DType::F32)), dg(params.size() * 4), dcopy(params.size() * 2), dlr(sizeof(double)),
        dcounter(sizeof(kernels::OptimizerStepCounter)) {
    const size_t n = params.size();
    for (int k = 0; k < state_count(v); ++k) ds.push_back(to_device(std::vector<float>(n, 0.0f), DType::F32));
    copy_to_device(dlr.get(), &lr, sizeof(double));
    cudaMemset(dcounter.get(), 0, sizeof(kernels::OptimizerStepCounter));
    args.kind = v.kind;
    args.sgd = fused_step_hyperparameters(v.sgd);
    args.adadelta = fused_step_hyperparameters(v.adadelta);
    args.adam = fused_step_hyperparameters(v.adam);
    args.n = static_cast<int64_t>(n);
    args.params = dp.as<float>();
    args.grads = dg.as<float>();
    for (size_t k = 0; k < ds.size(); ++k) args.state[k] = ds[k].as<float>();
    args.lr_device = dlr.as<double>();
    args.step_counter = dcounter.as<kernels::OptimizerStepCounter>();
    args.params_copy = dcopy.get();
    args.copy_dtype = DType::BF16;
  }
  int64_t steps() const { return download_raw<kernels::OptimizerStepCounter>(dcounter.get(), 1)[0].steps; }
  DeviceMem dp, dg, dcopy, dlr, dcounter;
  std::vector<DeviceMem> ds;
  kernels::FusedOptimizerArgs args;
};

TEST(KernelsOptimizer, RangedLaunchesEqualOneWholeLaunchBitForBit) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(43);
  const int64_t n = 40003;
  // Bucket-like ranges in launch order (descending offsets): a misaligned one (the scalar path), an aligned
  // one (the vector path), a ragged one and the first elements.
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{20001, 40003}, {8, 20001}, {3, 8}, {0, 3}};
  const int kSteps = 4;
  for (const Variant& v : variants()) {
    SCOPED_TRACE(v.name);
    const std::vector<float> params = random_values(n, rng, 0.01f, 1.0f);
    // split: each range reads its gradients at grads + offset; elsewhere: from a buffer of its own
    // (range_grads), while its grads hold NaN that no update may read.
    OptimizerBuffers whole(v, params, v.lr), split(v, params, v.lr), elsewhere(v, params, v.lr);
    std::vector<DeviceMem> range_grads;
    for (const auto& [begin, end] : ranges) range_grads.emplace_back(static_cast<size_t>(end - begin) * sizeof(float));
    elsewhere.dg.poison();
    for (int step = 1; step <= kSteps; ++step) {
      const std::vector<float> grads = random_values(n, rng, 1e-3f, 1.0f);
      upload(grads, DType::F32, whole.dg.get());
      upload(grads, DType::F32, split.dg.get());
      kernels::fused_optimizer_step(whole.args, nullptr);
      for (size_t r = 0; r < ranges.size(); ++r) {
        for (OptimizerBuffers* b : {&split, &elsewhere}) {
          kernels::FusedOptimizerArgs a = b->args;
          a.offset = ranges[r].first;
          a.count = ranges[r].second - ranges[r].first;
          a.advances_step_counter = r + 1 == ranges.size();
          if (b == &elsewhere) {
            upload(std::vector<float>(grads.begin() + a.offset, grads.begin() + a.offset + a.count), DType::F32,
                   range_grads[r].get());
            a.range_grads = range_grads[r].as<float>();
          }
          kernels::fused_optimizer_step(a, nullptr);
          // Until the last range, the counter still holds the previous step: every range reads step `step`.
          if (r + 1 < ranges.size()) {
            ASSERT_EQ(b->steps(), step - 1) << "after range " << r << ", step " << step;
          }
        }
      }
      ASSERT_CUDA(cudaDeviceSynchronize());
      EXPECT_EQ(whole.steps(), step);
      for (OptimizerBuffers* b : {&split, &elsewhere}) {
        SCOPED_TRACE(b == &split ? "gradients at grads + offset" : "gradients at range_grads");
        EXPECT_EQ(b->steps(), step) << "one advance per step";
        EXPECT_EQ(download_raw<uint32_t>(b->dp.get(), n), download_raw<uint32_t>(whole.dp.get(), n)) << "params, step " << step;
        EXPECT_EQ(download_raw<uint16_t>(b->dcopy.get(), n), download_raw<uint16_t>(whole.dcopy.get(), n))
            << "bf16 copy, step " << step;
        for (size_t k = 0; k < whole.ds.size(); ++k)
          EXPECT_EQ(download_raw<uint32_t>(b->ds[k].get(), n), download_raw<uint32_t>(whole.ds[k].get(), n))
              << "state " << k << ", step " << step;
      }
    }
    EXPECT_NE(download(whole.dp.get(), n, DType::F32), params) << "the steps must move the parameters";
  }
}

TEST(KernelsOptimizer, FoundInfSkipsAndLossScaleUnscales) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(42);
  const int64_t n = 4099;
  const std::vector<float> params = random_values(n, rng), grads = random_values(n, rng);
  const float loss_scale = 1024.0f;
  std::vector<float> scaled = grads;
  for (float& g : scaled) g *= loss_scale;

  DeviceMem dp = to_device(params, DType::F32), dg = to_device(scaled, DType::F32);
  DeviceMem dm = to_device(std::vector<float>(n, 0.0f), DType::F32), dv = to_device(std::vector<float>(n, 0.0f), DType::F32);
  DeviceMem dflag(4), dscale = to_device(std::vector<float>{loss_scale}, DType::F32);
  DeviceMem dcounter(sizeof(kernels::OptimizerStepCounter));
  cudaMemset(dcounter.get(), 0, sizeof(kernels::OptimizerStepCounter));
  kernels::FusedOptimizerArgs a;
  a.kind = kernels::OptimizerKind::Adam;
  a.adam = fused_step_hyperparameters(adamw_config());
  a.n = n;
  a.params = dp.as<float>();
  a.grads = dg.as<float>();
  a.state[0] = dm.as<float>();
  a.state[1] = dv.as<float>();
  a.lr = 1e-3;
  a.step_counter = dcounter.as<kernels::OptimizerStepCounter>();
  a.found_inf = dflag.as<int32_t>();
  a.loss_scale = dscale.as<float>();

  const int32_t one = 1, zero = 0;
  copy_to_device(dflag.get(), &one, 4);
  kernels::fused_optimizer_step(a, nullptr);  // skipped: nothing changes, the counter stays
  EXPECT_TRUE(all_close(download(dp.get(), n, DType::F32), params, 0.0));
  EXPECT_EQ(download_raw<kernels::OptimizerStepCounter>(dcounter.get(), 1)[0].steps, 0);

  copy_to_device(dflag.get(), &zero, 4);
  kernels::fused_optimizer_step(a, nullptr);  // applied, with the gradients divided by the loss scale
  std::vector<float> want = params;
  Adam cpu(n, adamw_config());
  cpu.step(want.data(), grads.data(), 1e-3);
  EXPECT_TRUE(all_close(download(dp.get(), n, DType::F32), want, 1e-5, max_abs(want)));
  EXPECT_EQ(download_raw<kernels::OptimizerStepCounter>(dcounter.get(), 1)[0].steps, 1);
}

}  // namespace
