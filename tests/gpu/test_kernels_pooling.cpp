// Pooling kernels against the CPU layers (src/nn/cpu/pooling.*): max pool (ties: the first maximum wins),
// average pool and global average pool, forward and backward, NCHW and NHWC, fp32/fp16/bf16, including
// overlapping windows (stride < kernel) and inputs the windows do not cover (floor mode). The NHWC cases
// whose windows tile the input with whole 16-byte vectors of channels take max pooling's vectorised kernels.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "kernels/pooling.h"
#include "nn/cpu/pooling.h"
#include "nn/spec.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct Case {
  int64_t n, c, h, w;
  int kernel, stride;
};
const Case kCases[] = {{4, 8, 24, 24, 2, 2}, {2, 3, 7, 9, 3, 2}, {3, 5, 6, 6, 3, 1}, {2, 33, 5, 5, 2, 2},
                       {1, 2, 4, 4, 4, 4},   {2, 16, 8, 8, 2, 2}, {2, 24, 6, 9, 3, 3}, {2, 16, 9, 8, 2, 2}};
const DType kDtypes[] = {DType::F32, DType::F16, DType::BF16};
const Layout kLayouts[] = {Layout::NCHW, Layout::NHWC};

std::string describe(const Case& k, DType t, Layout l) {
  return case_name(t, l) + " " + std::to_string(k.n) + "x" + std::to_string(k.c) + "x" + std::to_string(k.h) + "x" +
         std::to_string(k.w) + " k" + std::to_string(k.kernel) + " s" + std::to_string(k.stride);
}

Tensor<float> tensor_of(const std::vector<float>& v, const Shape& s) {
  Tensor<float> t(s);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

TEST(KernelsPooling, MaxPoolMatchesCpuLayerWithTies) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(31);
  for (const Case& k : kCases)
    for (DType t : kDtypes)
      for (Layout l : kLayouts)
        for (bool ties : {false, true}) {
          SCOPED_TRACE(describe(k, t, l) + (ties ? " ties" : ""));
          const Shape in_shape{k.n, k.c, k.h, k.w};
          std::vector<float> x = random_values(static_cast<size_t>(in_shape.numel()), rng, 0.1f, 4.0f);
          if (ties)
            for (float& v : x) v = std::round(v);  // small integers: many equal maxima per window
          quantize(x, t);
          cpu::MaxPool2d<float> layer(sb::maxpool2d("pool", k.kernel, k.stride));
          const Tensor<float> y_ref = layer.forward(tensor_of(x, in_shape), cpu::Mode::Train);
          const Shape& os = y_ref.shape();
          std::vector<float> dy = random_values(static_cast<size_t>(os.numel()), rng);
          quantize(dy, t);
          const Tensor<float> dx_ref = layer.backward(tensor_of(dy, os));

          const kernels::PoolShape shape{k.n, k.c, k.h, k.w, k.kernel, k.stride};
          DeviceMem dx_in = to_device(to_layout(x, l, k.n, k.c, k.h, k.w), t);
          DeviceMem ddy = to_device(to_layout(dy, l, os[0], os[1], os[2], os[3]), t);
          DeviceMem y(y_ref.storage().size() * dtype_size(t)), dx(x.size() * dtype_size(t));
          y.poison();
          dx.poison();
          kernels::maxpool_forward(dx_in.get(), y.get(), shape, l, t, nullptr);
          kernels::maxpool_backward(dx_in.get(), ddy.get(), dx.get(), shape, l, t, nullptr);
          EXPECT_TRUE(all_close(from_layout(download(y.get(), y_ref.storage().size(), t), l, os[0], os[1], os[2], os[3]),
                                y_ref.storage(), 0.0));
          // Same windows, same order of additions: exact in fp32; one rounding in fp16/bf16.
          EXPECT_TRUE(all_close(from_layout(download(dx.get(), x.size(), t), l, k.n, k.c, k.h, k.w), dx_ref.storage(),
                                t == DType::F32 ? 0.0 : tolerance(t) / 4));
        }
}

TEST(KernelsPooling, AvgPoolMatchesCpuLayer) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(32);
  for (const Case& k : kCases)
    for (DType t : kDtypes)
      for (Layout l : kLayouts) {
        SCOPED_TRACE(describe(k, t, l));
        const Shape in_shape{k.n, k.c, k.h, k.w};
        std::vector<float> x = random_values(static_cast<size_t>(in_shape.numel()), rng);
        quantize(x, t);
        cpu::AvgPool2d<float> layer(sb::avgpool2d("pool", k.kernel, k.stride));
        const Tensor<float> y_ref = layer.forward(tensor_of(x, in_shape), cpu::Mode::Train);
        const Shape& os = y_ref.shape();
        std::vector<float> dy = random_values(static_cast<size_t>(os.numel()), rng);
        quantize(dy, t);
        const Tensor<float> dx_ref = layer.backward(tensor_of(dy, os));

        const kernels::PoolShape shape{k.n, k.c, k.h, k.w, k.kernel, k.stride};
        DeviceMem dx_in = to_device(to_layout(x, l, k.n, k.c, k.h, k.w), t);
        DeviceMem ddy = to_device(to_layout(dy, l, os[0], os[1], os[2], os[3]), t);
        DeviceMem y(y_ref.storage().size() * dtype_size(t)), dx(x.size() * dtype_size(t));
        y.poison();
        dx.poison();
        kernels::avgpool_forward(dx_in.get(), y.get(), shape, l, t, nullptr);
        kernels::avgpool_backward(ddy.get(), dx.get(), shape, l, t, nullptr);
        // Sums of signed values cancel: errors against the tensor's scale.
        const std::vector<float> y_got = from_layout(download(y.get(), y_ref.storage().size(), t), l, os[0], os[1], os[2], os[3]);
        const std::vector<float> dx_got = from_layout(download(dx.get(), x.size(), t), l, k.n, k.c, k.h, k.w);
        EXPECT_TRUE(all_close(y_got, y_ref.storage(), t == DType::F32 ? 1e-6 : tolerance(t) / 2, max_abs(y_ref.storage())));
        EXPECT_TRUE(all_close(dx_got, dx_ref.storage(), t == DType::F32 ? 1e-6 : tolerance(t) / 2, max_abs(dx_ref.storage())));
      }
}

TEST(KernelsPooling, GlobalAvgPoolMatchesCpuLayer) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(33);
  struct Dims {
    int64_t n, c, h, w;
  };
  // NHWC's gradient is written a 16-byte vector a thread where the channels fill whole vectors (fp32 4,
  // fp16 and bf16 8), element by element where they do not.
  for (Dims d : {Dims{8, 64, 8, 8}, Dims{3, 5, 7, 3}, Dims{2, 640, 8, 8}, Dims{4, 10, 1, 1}, Dims{1, 3, 33, 35},
                 Dims{2, 12, 3, 3}, Dims{4, 2048, 7, 7}})
    for (DType t : kDtypes)
      for (Layout l : kLayouts) {
        SCOPED_TRACE(case_name(t, l) + " " + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" + std::to_string(d.w));
        const Shape in_shape{d.n, d.c, d.h, d.w};
        std::vector<float> x = random_values(static_cast<size_t>(in_shape.numel()), rng);
        quantize(x, t);
        cpu::GlobalAvgPool<float> layer(sb::global_avgpool("gap"));
        const Tensor<float> y_ref = layer.forward(tensor_of(x, in_shape), cpu::Mode::Train);
        std::vector<float> dy = random_values(static_cast<size_t>(d.n * d.c), rng);
        quantize(dy, t);
        const Tensor<float> dx_ref = layer.backward(tensor_of(dy, Shape{d.n, d.c, 1, 1}));

        DeviceMem dx_in = to_device(to_layout(x, l, d.n, d.c, d.h, d.w), t), ddy = to_device(dy, t);
        DeviceMem y(dy.size() * dtype_size(t)), dx(x.size() * dtype_size(t));
        y.poison();
        dx.poison();
        kernels::global_avgpool_forward(dx_in.get(), y.get(), d.n, d.c, d.h, d.w, l, t, nullptr);
        kernels::global_avgpool_backward(ddy.get(), dx.get(), d.n, d.c, d.h, d.w, l, t, nullptr);
        // A different summation order than the CPU's sequential one: fp32 rounding, against the scale.
        EXPECT_TRUE(all_close(download(y.get(), dy.size(), t), y_ref.storage(), t == DType::F32 ? 1e-5 : tolerance(t) / 2,
                              max_abs(y_ref.storage())));
        EXPECT_TRUE(all_close(from_layout(download(dx.get(), x.size(), t), l, d.n, d.c, d.h, d.w), dx_ref.storage(),
                              t == DType::F32 ? 0.0 : tolerance(t) / 4));
      }
}

}  // namespace
