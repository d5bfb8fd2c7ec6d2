// Padded max pooling kernels (kernels/pooling.h, `pad` > 0) against the CPU layer (src/nn/cpu/pooling.*):
// forward and backward, NCHW and NHWC, fp32/fp16/bf16, with negative inputs (a padded cell must never
// win) and with ties (the first maximum inside the image wins). In NHWC, backward from the positions that
// forward kept (one channel a thread, or 16-byte vectors where the channels and pointers allow) against
// the CPU layer and, bit for bit, against backward searching the windows again, NaNs included.
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

          const int64_t bytes = kernels::maxpool_positions_bytes(shape, l, t);
          ASSERT_EQ(bytes > 0, l == Layout::NHWC);  // every case overlaps or is padded
          if (bytes == 0) continue;
          EXPECT_EQ(bytes, os.numel());
          for (int offset : {0, 1}) {  // 1: positions that are not 16-byte aligned, one channel a thread
            SCOPED_TRACE("positions at offset " + std::to_string(offset));
            DeviceMem positions(static_cast<size_t>(bytes) + 16), y_kept(y.bytes()), dx_kept(dx.bytes());
            uint8_t* at = static_cast<uint8_t*>(positions.get()) + offset;
            y_kept.poison();
            dx_kept.poison();
            kernels::maxpool_forward(dx_in.get(), y_kept.get(), shape, l, t, nullptr, at);
            kernels::maxpool_backward(dx_in.get(), ddy.get(), dx_kept.get(), shape, l, t, nullptr, at);
            EXPECT_EQ(download_raw<uint8_t>(y_kept.get(), y.bytes()), download_raw<uint8_t>(y.get(), y.bytes()));
            EXPECT_EQ(download_raw<uint8_t>(dx_kept.get(), dx.bytes()), download_raw<uint8_t>(dx.get(), dx.bytes()));
          }
        }
}

// NaNs: the last NaN of a window is its maximum (as the search finds it), in the positions kept and found.
TEST(KernelsPoolingPadded, KeptPositionsFollowNaNsAsTheSearchDoes) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(43);
  const PaddedCase k{2, 16, 9, 10, 3, 2, 1};
  const kernels::PoolShape shape{k.n, k.c, k.h, k.w, k.kernel, k.stride, k.pad};
  for (DType t : kDtypes) {
    SCOPED_TRACE(describe(k, t, Layout::NHWC));
    std::vector<float> x = random_values(static_cast<size_t>(k.n * k.c * k.h * k.w), rng, -2.0f, 2.0f);
    for (size_t i = 0; i < x.size(); i += 7) x[i] = std::nanf("");
    quantize(x, t);
    const int64_t out = kernels::maxpool_positions_bytes(shape, Layout::NHWC, t);
    ASSERT_GT(out, 0);
    std::vector<float> dy = random_values(static_cast<size_t>(out), rng);
    quantize(dy, t);
    DeviceMem dx_in = to_device(x, t), ddy = to_device(dy, t);
    DeviceMem y(static_cast<size_t>(out) * dtype_size(t)), positions(static_cast<size_t>(out));
    DeviceMem dx_kept(x.size() * dtype_size(t)), dx_found(x.size() * dtype_size(t));
    kernels::maxpool_forward(dx_in.get(), y.get(), shape, Layout::NHWC, t, nullptr,
                             static_cast<uint8_t*>(positions.get()));
    kernels::maxpool_backward(dx_in.get(), ddy.get(), dx_kept.get(), shape, Layout::NHWC, t, nullptr,
                              static_cast<const uint8_t*>(positions.get()));
    kernels::maxpool_backward(dx_in.get(), ddy.get(), dx_found.get(), shape, Layout::NHWC, t, nullptr);
    EXPECT_EQ(download_raw<uint8_t>(dx_kept.get(), dx_kept.bytes()), download_raw<uint8_t>(dx_found.get(), dx_found.bytes()));
    int nan_outputs = 0;
    for (float v : download(y.get(), static_cast<size_t>(out), t)) nan_outputs += std::isnan(v) ? 1 : 0;
    EXPECT_GT(nan_outputs, 0);
  }
}

// Windows that keep their positions at any size do so at every size and element type tried (the layers
// rely on it: backward then never reads the input, which the network may have given back).
TEST(KernelsPoolingPadded, KeepingPositionsAtAnySizeHoldsAtEachSize) {
  struct Window {
    int kernel, stride, pad;
  };
  int kept = 0;
  for (Window win : {Window{3, 2, 1}, Window{3, 1, 1}, Window{2, 2, 0}, Window{3, 3, 0}, Window{2, 1, 0},
                     Window{17, 17, 0}, Window{17, 16, 8}})
    for (Layout l : {Layout::NCHW, Layout::NHWC}) {
      if (!kernels::maxpool_keeps_positions_at_any_size(win.kernel, win.stride, win.pad, l)) continue;
      ++kept;
      for (DType t : {DType::F32, DType::BF16, DType::F16})
        for (int64_t side : {17, 34, 112})
          for (int64_t c : {3, 8, 64}) {
            const kernels::PoolShape s{2, c, side, side, win.kernel, win.stride, win.pad};
            EXPECT_GT(kernels::maxpool_positions_bytes(s, l, t), 0)
                << win.kernel << "/" << win.stride << " pad " << win.pad << " side " << side << " c " << c;
          }
    }
  EXPECT_EQ(kept, 3);  // 3x3/2 and 3x3/1 with padding 1, and 2x2/1, under NHWC
  EXPECT_FALSE(kernels::maxpool_keeps_positions_at_any_size(2, 2, 0, Layout::NHWC));  // tiles where sizes allow
}

}  // namespace
