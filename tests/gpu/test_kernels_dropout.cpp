// Dropout kernels against the CPU layer (src/nn/cpu/dropout.*): the same elements are dropped (masks
// identical, in NCHW and NHWC, for shapes that take each kernel path), kept ones scaled by 1/(1-p), and
// backward reuses the forward's mask.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "kernels/dropout.h"
#include "nn/cpu/dropout.h"
#include "nn/spec.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct Dims {
  int64_t n, c, h, w;
};

TEST(KernelsDropout, MaskAndValuesMatchCpuLayer) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(11);
  const uint64_t stream_key = 0x5eedf00d12345ull, step = 17;
  // w % 4 == 0 (vector NHWC path), w % 4 != 0 (per-element path), h = w = 1 (a Linear's output), odd totals.
  for (Dims d : {Dims{4, 16, 8, 8}, Dims{3, 5, 7, 7}, Dims{64, 128, 1, 1}, Dims{2, 3, 5, 3}, Dims{1, 1, 9, 11}})
    for (double p : {0.5, 0.3, 0.1})
      for (DType t : {DType::F32, DType::BF16, DType::F16})
        for (Layout l : {Layout::NCHW, Layout::NHWC}) {
          SCOPED_TRACE(case_name(t, l) + " p " + std::to_string(p) + " dims " + std::to_string(d.n) + "x" +
                       std::to_string(d.c) + "x" + std::to_string(d.h) + "x" + std::to_string(d.w));
          const Shape shape{d.n, d.c, d.h, d.w};
          const size_t size = static_cast<size_t>(shape.numel());
          std::vector<float> x = random_values(size, rng), dy = random_values(size, rng);
          quantize(x, t);
          quantize(dy, t);

          cpu::Dropout<float> layer(sb::dropout("features.drop1", p));
          layer.set_random_stream(stream_key, step);
          Tensor<float> xt(shape), dyt(shape);
          std::copy(x.begin(), x.end(), xt.data());
          std::copy(dy.begin(), dy.end(), dyt.data());
          const std::vector<float> y_ref = layer.forward(xt, cpu::Mode::Train).storage();
          const std::vector<float> dx_ref = layer.backward(dyt).storage();

          const uint64_t mask_key = dropout_mask_key(stream_key, "features.drop1");
          DeviceMem dx_in = to_device(to_layout(x, l, d.n, d.c, d.h, d.w), t), dy_in = to_device(to_layout(dy, l, d.n, d.c, d.h, d.w), t);
          DeviceMem y(size * dtype_size(t)), dx(size * dtype_size(t));
          y.poison();
          dx.poison();
          kernels::dropout_forward(dx_in.get(), y.get(), d.n, d.c, d.h, d.w, l, t, p, mask_key, step, nullptr);
          kernels::dropout_backward(dy_in.get(), dx.get(), d.n, d.c, d.h, d.w, l, t, p, mask_key, step, nullptr);
          const std::vector<float> y_got = from_layout(download(y.get(), size, t), l, d.n, d.c, d.h, d.w);
          const std::vector<float> dx_got = from_layout(download(dx.get(), size, t), l, d.n, d.c, d.h, d.w);

          size_t mask_mismatch = 0, kept = 0;
          for (size_t i = 0; i < size; ++i) {
            mask_mismatch += (y_got[i] == 0.0f) != (y_ref[i] == 0.0f);
            mask_mismatch += (dx_got[i] == 0.0f) != (dx_ref[i] == 0.0f);
            mask_mismatch += (y_ref[i] == 0.0f) != (dx_ref[i] == 0.0f);
            kept += y_ref[i] != 0.0f;
          }
          EXPECT_EQ(mask_mismatch, 0u);
          if (size >= 1000) { EXPECT_NEAR(static_cast<double>(kept) / size, 1.0 - p, 0.05); }
          // fp32: the same float multiply as the CPU; fp16/bf16: that value rounded once.
          const double tol = t == DType::F32 ? 0.0 : tolerance(t) / 4;
          EXPECT_TRUE(all_close(y_got, y_ref, tol));
          EXPECT_TRUE(all_close(dx_got, dx_ref, tol));

          // In place (y aliases x), with the step read from device memory (the CUDA-graph mode; the value
          // argument is then ignored), gives the same result.
          DeviceMem dstep = to_device_raw(std::vector<uint64_t>{step});
          kernels::dropout_forward(dx_in.get(), dx_in.get(), d.n, d.c, d.h, d.w, l, t, p, mask_key, step + 1000,
                                   nullptr, dstep.as<uint64_t>());
          EXPECT_TRUE(all_close(from_layout(download(dx_in.get(), size, t), l, d.n, d.c, d.h, d.w), y_ref, tol));
        }
}

TEST(KernelsDropout, OtherStepsDrawOtherMasksAndPZeroIsIdentity) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(12);
  const int64_t n = 8, c = 8, h = 4, w = 4;
  const size_t size = static_cast<size_t>(n * c * h * w);
  std::vector<float> x = random_values(size, rng);
  DeviceMem dx = to_device(x, DType::F32), a(size * 4), b(size * 4);
  kernels::dropout_forward(dx.get(), a.get(), n, c, h, w, Layout::NCHW, DType::F32, 0.5, 99, 1, nullptr);
  kernels::dropout_forward(dx.get(), b.get(), n, c, h, w, Layout::NCHW, DType::F32, 0.5, 99, 2, nullptr);
  const std::vector<float> ya = download(a.get(), size, DType::F32), yb = download(b.get(), size, DType::F32);
  size_t differ = 0;
  for (size_t i = 0; i < size; ++i) differ += (ya[i] == 0.0f) != (yb[i] == 0.0f);
  EXPECT_GT(differ, size / 4);

  b.poison();
  kernels::dropout_forward(dx.get(), b.get(), n, c, h, w, Layout::NHWC, DType::F32, 0.0, 99, 2, nullptr);
  EXPECT_TRUE(all_close(download(b.get(), size, DType::F32), x, 0.0));

  // Misaligned buffers (the scalar path) give what aligned ones (the vector path) give: the mask follows
  // the logical index, not the address.
  for (DType t : {DType::F32, DType::BF16}) {
    const size_t e = dtype_size(t);
    DeviceMem src((size + 1) * e), dst((size + 1) * e), ref(size * e);
    upload(x, t, static_cast<char*>(src.get()) + e);
    dst.poison();
    DeviceMem aligned = to_device(x, t);
    kernels::dropout_forward(aligned.get(), ref.get(), n, c, h, w, Layout::NCHW, t, 0.25, 7, 3, nullptr);
    kernels::dropout_forward(static_cast<char*>(src.get()) + e, static_cast<char*>(dst.get()) + e, n, c, h, w,
                             Layout::NCHW, t, 0.25, 7, 3, nullptr);
    EXPECT_TRUE(all_close(download(static_cast<char*>(dst.get()) + e, size, t), download(ref.get(), size, t), 0.0))
        << dtype_name(t);
  }
}

}  // namespace
