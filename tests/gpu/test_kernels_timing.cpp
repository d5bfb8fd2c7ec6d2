// Not a correctness test: times the memory-bound kernels at training sizes and prints the achieved
// bandwidth (bytes each kernel must move / median time of 20 runs, CUDA events), so regressions show.
// It asserts nothing beyond the launches succeeding; skip it with --gtest_filter=-KernelsTiming.*.
#include <gtest/gtest.h>

#include <functional>

#include "gpu_test_util.h"
#include "kernels/augment.h"
#include "kernels/dropout.h"
#include "kernels/elementwise.h"
#include "kernels/loss.h"
#include "kernels/optimizer.h"
#include "kernels/pooling.h"
#include "optim/cuda/fused_step_hyperparameters.h"

namespace {

using namespace sb;
using namespace sb::gputest;

void report(const char* name, double bytes, const std::function<void()>& run) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i) run();  // warm-up
  std::vector<float> ms;
  for (int i = 0; i < 20; ++i) {
    cudaEventRecord(start);
    run();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::printf("[timing] %-44s %9.1f us %8.0f GB/s\n", name, median * 1e3, bytes / (median * 1e-3) / 1e9);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

DeviceMem random_device(size_t n, DType t, std::mt19937_64& rng) { return to_device(random_values(n, rng), t); }

TEST(KernelsTiming, PrintBandwidth) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(71);
  {  // the WRN-28-10's flat buffers: AdamW with the bf16 weight copy; SGD with momentum
    const int64_t n = 36'500'000;
    DeviceMem p = random_device(n, DType::F32, rng), g = random_device(n, DType::F32, rng);
    DeviceMem m(n * 4), v(n * 4), copy(n * 2);
    cudaMemset(m.get(), 0, n * 4);
    cudaMemset(v.get(), 0, n * 4);
    kernels::FusedOptimizerArgs a;
    a.kind = kernels::OptimizerKind::Adam;
    a.adam = fused_step_hyperparameters(adamw_config());
    a.n = n;
    a.params = p.as<float>();
    a.grads = g.as<float>();
    a.state[0] = m.as<float>();
    a.state[1] = v.as<float>();
    a.lr = 1e-3;
    a.params_copy = copy.get();
    a.copy_dtype = DType::BF16;
    report("fused AdamW 36.5M + bf16 copy", n * 30.0, [&] { kernels::fused_optimizer_step(a, nullptr); });
    a.kind = kernels::OptimizerKind::Sgd;
    a.sgd = fused_step_hyperparameters(SgdConfig{0.9, 0.0, true, 5e-4});
    a.params_copy = nullptr;
    report("fused SGD-Nesterov 36.5M", n * 20.0, [&] { kernels::fused_optimizer_step(a, nullptr); });
  }
  const int64_t N = 256, C = 160, H = 32, W = 32, n = N * C * H * W;  // a WRN activation
  DeviceMem x = random_device(n, DType::BF16, rng), y(n * 2), z(n * 2), acc = random_device(n, DType::F32, rng);
  report("relu bf16 256x160x32x32", n * 4.0,
         [&] { kernels::relu_forward(x.get(), y.get(), n, DType::BF16, nullptr); });
  report("add bf16", n * 6.0, [&] { kernels::add(x.get(), y.get(), z.get(), n, DType::BF16, nullptr); });
  report("accumulate bf16 into f32", n * 10.0,
         [&] { kernels::accumulate_into_f32(x.get(), DType::BF16, acc.as<float>(), n, true, nullptr); });
  report("nchw_to_nhwc bf16", n * 4.0,
         [&] { kernels::nchw_to_nhwc(x.get(), y.get(), N, C, H, W, DType::BF16, nullptr); });
  report("dropout NHWC bf16", n * 4.0, [&] {
    kernels::dropout_forward(x.get(), y.get(), N, C, H, W, Layout::NHWC, DType::BF16, 0.3, 1234, 5, nullptr);
  });
  report("dropout NCHW bf16", n * 4.0, [&] {
    kernels::dropout_forward(x.get(), y.get(), N, C, H, W, Layout::NCHW, DType::BF16, 0.3, 1234, 5, nullptr);
  });
  report("maxpool 2x2 NHWC bf16", n * 2.5, [&] {
    kernels::maxpool_forward(x.get(), y.get(), kernels::PoolShape{N, C, H, W, 2, 2}, Layout::NHWC, DType::BF16, nullptr);
  });
  report("maxpool 2x2 backward NHWC bf16", n * 4.5, [&] {
    kernels::maxpool_backward(x.get(), y.get(), z.get(), kernels::PoolShape{N, C, H, W, 2, 2}, Layout::NHWC,
                              DType::BF16, nullptr);
  });
  report("global avgpool NHWC bf16 256x640x8x8", N * 640 * 64 * 2.0, [&] {
    kernels::global_avgpool_forward(x.get(), y.get(), N, 640, 8, 8, Layout::NHWC, DType::BF16, nullptr);
  });
  report("bias_backward NHWC bf16 64x32x26x26", 64 * 32 * 676 * 2.0, [&] {
    kernels::bias_backward(x.get(), DType::BF16, acc.as<float>(), 64, 32, 26, 26, Layout::NHWC, false, nullptr);
  });
  report("bias_backward NCHW f32 64x32x26x26", 64 * 32 * 676 * 4.0, [&] {
    kernels::bias_backward(acc.get(), DType::F32, acc.as<float>() + n / 2, 64, 32, 26, 26, Layout::NCHW, false, nullptr);
  });
  {
    std::vector<int32_t> labels(256);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 100);
    DeviceMem dl = to_device_raw(labels);
    report("softmax_cross_entropy bf16 256x100", 256 * 100 * 4.0, [&] {
      kernels::softmax_cross_entropy(x.get(), dl.as<int32_t>(), y.get(), 256, 100, DType::BF16, 1.0f, nullptr, nullptr,
                                     nullptr, nullptr);
    });
  }
  {
    const int64_t count = 50000;
    std::vector<uint8_t> images(static_cast<size_t>(count * 3072));
    for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<uint8_t>(i * 131 + 7);
    std::vector<int32_t> labels(static_cast<size_t>(count), 3);
    std::vector<int64_t> indices(256);
    for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>((i * 7919) % count);
    DeviceMem di = to_device_raw(images), dl = to_device_raw(labels), dx = to_device_raw(indices), lo(256 * 4);
    kernels::GatherBatchArgs a;
    a.images = di.as<uint8_t>();
    a.labels = dl.as<int32_t>();
    a.indices = dx.as<int64_t>();
    a.batch = 256;
    a.channels = 3;
    a.height = 32;
    a.width = 32;
    a.random_crop = true;
    a.horizontal_flip = true;
    a.out = y.get();
    a.dtype = DType::BF16;
    a.layout = Layout::NHWC;
    a.labels_out = lo.as<int32_t>();
    report("gather_batch CIFAR 256 crop+flip NHWC bf16", 256 * 3072 * 3.0, [&] { kernels::gather_batch(a, nullptr); });
    // The ResNets' synthetic batch: 256 of 1,024 resident 3x224x224 images, no augmentation, NHWC fp16.
    const int64_t large = 1024, sample = 3 * 224 * 224;
    std::vector<uint8_t> photos(static_cast<size_t>(large * sample));
    for (size_t i = 0; i < photos.size(); ++i) photos[i] = static_cast<uint8_t>(i * 131 + 7);
    for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>((i * 7919) % large);
    DeviceMem dp = to_device_raw(photos), dq = to_device_raw(indices);
    a.images = dp.as<uint8_t>();
    a.indices = dq.as<int64_t>();
    a.height = a.width = 224;
    a.random_crop = a.horizontal_flip = false;
    a.dtype = DType::F16;
    report("gather_batch 256 of 3x224x224 NHWC fp16", 256 * sample * 3.0, [&] { kernels::gather_batch(a, nullptr); });
  }
}

}  // namespace
