// Padded max pooling kernels (kernels/pooling.h, `pad` > 0) against the CPU layer (src/nn/cpu/pooling.*):
// forward and backward, NCHW and NHWC, fp32/fp16/bf16, with negative inputs (a padded cell must never
// win) and with ties (the first maximum inside the image wins).
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "kernels/pooling.h"
#include "nn/cpu/pooling.h"
#include "nn/spec.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct PaddedCase {
  int64_t n, c, h, w;
  int kernel, stride, pad;
};
// ResNet's stem pool (3/2/1) on even and odd sizes and 16-channel NHWC (which the unpadded path would
// vectorise), overlapping stride 1, a window overhanging both sides, kernel 2 with padding 1.
const PaddedCase kCases[] = {{2, 8, 16, 16, 3, 2, 1}, {2, 3, 7, 9, 3, 2, 1}, {2, 16, 8, 8, 3, 2, 1},
                             {3, 5, 6, 6, 3, 1, 1},   {1, 2, 3, 3, 4, 2, 2}, {2, 4, 5, 4, 2, 2, 1}};
const DType kDtypes[] = {DType::F32, DType::F16, DType::BF16};
const Layout kLayouts[] = {Layout::NCHW, Layout::NHWC};

std::string describe(const PaddedCase& k, DType t, Layout l) {
  return case_name(t, l) + " " + std::to_string(k.n) + "x" + std::to_string(k.c) + "x" + std::to_string(k.h) + "x" +
         std::to_string(k.w) + " k" + std::to_string(k.kernel) + " s" + std::to_string(k.stride) + " p" +
         std::to_string(k.pad);
}

Tensor<float> tensor_of(const std::vector<float>& v, const Shape& s) {
  Tensor<float> t(s);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

TEST(KernelsPoolingPadded, MaxPoolMatchesCpuLayer) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(41);
  for (const PaddedCase& k : kCases)
    for (DType t : kDtypes)
      for (Layout l : kLayouts)
        for (bool ties : {false, true}) {
          SCOPED_TRACE(describe(k, t, l) + (ties ? " ties" : ""));
          const Shape in_shape{k.n, k.c, k.h, k.w};
          std::vector<float> x = random_values(static_cast<size_t>(in_shape.numel()), rng, -4.0f, -0.1f);
          if (ties)
            for (float& v : x) v = std::round(v);  // small negative integers: many equal maxima per window
          quantize(x, t);
          cpu::MaxPool2d<float> layer(sb::maxpool2d("pool", k.kernel, k.stride, k.pad));
          const Tensor<float> y_ref = layer.forward(tensor_of(x, in_shape), cpu::Mode::Train);
          const Shape& os = y_ref.shape();
          std::vector<float> dy = random_values(static_cast<size_t>(os.numel()), rng);
          quantize(dy, t);
          const Tensor<float> dx_ref = layer.backward(tensor_of(dy, os));

          const kernels::PoolShape shape{k.n, k.c, k.h, k.w, k.kernel, k.stride, k.pad};
          DeviceMem dx_in = to_device(to_layout(x, l, k.n, k.c, k.h, k.w), t);
          DeviceMem ddy = to_device(to_layout(dy, l, os[0], os[1], os[2], os[3]), t);
          DeviceMem y(y_ref.storage().size() * dtype_size(t)), dx(x.size() * dtype_size(t));
          y.poison();
          dx.poison();
          kernels::maxpool_forward(dx_in.get(), y.get(), shape, l, t, nullptr);
          kernels::maxpool_backward(dx_in.get(), ddy.get(), dx.get(), shape, l, t, nullptr);
          EXPECT_TRUE(all_close(from_layout(download(y.get(), y_ref.storage().size(), t), l, os[0], os[1], os[2], os[3]),
                                y_ref.storage(), 0.0));
          // The same windows in the same order of additions: exact in fp32; one rounding in fp16/bf16.
          EXPECT_TRUE(all_close(from_layout(download(dx.get(), x.size(), t), l, k.n, k.c, k.h, k.w), dx_ref.storage(),
                                t == DType::F32 ? 0.0 : tolerance(t) / 4));
        }
}

}  // namespace
