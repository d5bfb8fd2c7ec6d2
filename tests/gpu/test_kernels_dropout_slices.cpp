// Dropout of a slice of a batch (a DataParallel replica's): with first_element, the kernels draw the
// slice's part of the whole batch's mask (the CPU layer's over the whole batch), in NCHW and NHWC, on
// each kernel path.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "kernels/dropout.h"
#include "nn/cpu/dropout.h"
#include "nn/spec.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct Dims {
  int64_t c, h, w;
};

TEST(KernelsDropoutSlices, ASliceDrawsItsPartOfTheWholeBatchsMask) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  const uint64_t stream_key = 0xabcdef12345ull, step = 3;
  const int64_t batch = 6, first = 4, count = 2;  // samples [4, 6) of 6
  // w % 4 == 0 (vector NHWC path), w % 4 != 0 (per-element path), h = w = 1 (a Linear's output).
  for (Dims d : {Dims{16, 8, 8}, Dims{5, 7, 7}, Dims{128, 1, 1}})
    for (Layout l : {Layout::NCHW, Layout::NHWC}) {
      SCOPED_TRACE(std::string(l == Layout::NCHW ? "nchw " : "nhwc ") + std::to_string(d.c) + "x" + std::to_string(d.h) +
                   "x" + std::to_string(d.w));
      const Shape whole{batch, d.c, d.h, d.w};
      const int64_t per_sample = d.c * d.h * d.w;
      std::vector<float> x = random_values(static_cast<size_t>(whole.numel()), rng);
      cpu::Dropout<float> layer(sb::dropout("drop", 0.5));
      layer.set_random_stream(stream_key, step);
      Tensor<float> xt(whole);
      std::copy(x.begin(), x.end(), xt.data());
      const std::vector<float> y_whole = layer.forward(xt, cpu::Mode::Train).storage();

      const size_t size = static_cast<size_t>(count * per_sample);
      const std::vector<float> x_slice(x.begin() + first * per_sample, x.begin() + (first + count) * per_sample);
      DeviceMem in = to_device(to_layout(x_slice, l, count, d.c, d.h, d.w), DType::F32);
      DeviceMem y(size * sizeof(float));
      y.poison();
      kernels::dropout_forward(in.get(), y.get(), count, d.c, d.h, d.w, l, DType::F32, 0.5, dropout_mask_key(stream_key, "drop"),
                               step, nullptr, nullptr, static_cast<uint64_t>(first * per_sample));
      ASSERT_CUDA(cudaDeviceSynchronize());
      const std::vector<float> y_got = from_layout(download(y.get(), size, DType::F32), l, count, d.c, d.h, d.w);
      size_t mismatched = 0;
      for (size_t i = 0; i < size; ++i) mismatched += y_got[i] != y_whole[static_cast<size_t>(first * per_sample) + i];
      EXPECT_EQ(mismatched, 0u);
    }
}

}  // namespace
