// Elementwise kernels against the CPU reference (ReLU layer, residual_add) and host loops (scale, casts,
// scaled casts, accumulation, transposes, bias add and its reduction), for fp32/fp16/bf16, aligned (vector)
// and misaligned (scalar) pointers, and sizes with ragged tails.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "kernels/elementwise.h"
#include "nn/cpu/activations.h"
#include "nn/cpu/residual_add.h"
#include "nn/spec.h"

namespace {

using namespace sb;
using namespace sb::gputest;

const DType kDtypes[] = {DType::F32, DType::F16, DType::BF16};
const Layout kLayouts[] = {Layout::NCHW, Layout::NHWC};

// A device copy of `host` at an element offset of `shift` into its allocation (shift = 1 makes the pointer
// misaligned for 16-byte accesses and exercises the scalar path).
struct Shifted {
  DeviceMem mem;
  void* ptr;
  Shifted(const std::vector<float>& host, DType t, int shift)
      : mem((host.size() + 8) * dtype_size(t)), ptr(static_cast<char*>(mem.get()) + shift * dtype_size(t)) {
    mem.poison();
    upload(host, t, ptr);
  }
  Shifted(size_t n, DType t, int shift)
      : mem((n + 8) * dtype_size(t)), ptr(static_cast<char*>(mem.get()) + shift * dtype_size(t)) {
    mem.poison();
  }
};

TEST(KernelsElementwise, ReluForwardBackwardMatchCpuLayer) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(1);
  for (DType t : kDtypes)
    for (int shift : {0, 1})
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{4099}, int64_t{1} << 18}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " shift " + std::to_string(shift) + " n " + std::to_string(n));
        std::vector<float> x = random_values(static_cast<size_t>(n), rng), dy = random_values(static_cast<size_t>(n), rng);
        quantize(x, t);
        quantize(dy, t);
        cpu::ReLU<float> relu(sb::relu("r"));
        Tensor<float> xt(Shape{n}), dyt(Shape{n});
        std::copy(x.begin(), x.end(), xt.data());
        std::copy(dy.begin(), dy.end(), dyt.data());
        const Tensor<float>& y_ref = relu.forward(xt, cpu::Mode::Train);
        const Tensor<float>& dx_ref = relu.backward(dyt);

        Shifted dx_dev(x, t, shift), y_dev(static_cast<size_t>(n), t, shift), ddy(dy, t, shift),
            dxo(static_cast<size_t>(n), t, shift);
        kernels::relu_forward(dx_dev.ptr, y_dev.ptr, n, t, nullptr);
        kernels::relu_backward(y_dev.ptr, ddy.ptr, dxo.ptr, n, t, nullptr);
        EXPECT_TRUE(all_close(download(y_dev.ptr, n, t), y_ref.storage(), 0.0));
        EXPECT_TRUE(all_close(download(dxo.ptr, n, t), dx_ref.storage(), 0.0));
        // In place: y aliases x.
        kernels::relu_forward(dx_dev.ptr, dx_dev.ptr, n, t, nullptr);
        EXPECT_TRUE(all_close(download(dx_dev.ptr, n, t), y_ref.storage(), 0.0));
      }
}

TEST(KernelsElementwise, AddAndScaleMatchHost) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(2);
  for (DType t : kDtypes)
    for (int shift : {0, 1}) {
      const int64_t n = 100003;
      SCOPED_TRACE(std::string(dtype_name(t)) + " shift " + std::to_string(shift));
      std::vector<float> a = random_values(n, rng), b = random_values(n, rng);
      quantize(a, t);
      quantize(b, t);
      Tensor<float> at(Shape{n}), bt(Shape{n}), ref;
      std::copy(a.begin(), a.end(), at.data());
      std::copy(b.begin(), b.end(), bt.data());
      cpu::residual_add(at, bt, ref);
      Shifted da(a, t, shift), db(b, t, shift), out(static_cast<size_t>(n), t, shift);
      kernels::add(da.ptr, db.ptr, out.ptr, n, t, nullptr);
      EXPECT_TRUE(all_close(download(out.ptr, n, t), ref.storage(), tolerance(t) / 4));

      std::vector<float> scaled(n);
      for (int64_t i = 0; i < n; ++i) scaled[i] = 0.37f * a[i];
      kernels::scale(da.ptr, da.ptr, 0.37f, n, t, nullptr);  // in place
      EXPECT_TRUE(all_close(download(da.ptr, n, t), scaled, tolerance(t) / 4));
    }
}

TEST(KernelsElementwise, CastRoundsLikeTheHostConversions) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(3);
  const int64_t n = 65539;
  std::vector<float> x = random_values(n, rng, 1e-3f, 300.0f);
  for (DType src : kDtypes)
    for (DType dst : kDtypes)
      for (int shift : {0, 1}) {
        SCOPED_TRACE(std::string(dtype_name(src)) + "->" + dtype_name(dst) + " shift " + std::to_string(shift));
        std::vector<float> xs = x;
        quantize(xs, src);
        std::vector<float> want = xs;
        quantize(want, dst);  // host round to nearest even
        Shifted in(xs, src, shift), out(static_cast<size_t>(n), dst, shift);
        kernels::cast(in.ptr, src, out.ptr, dst, n, nullptr);
        EXPECT_TRUE(all_close(download(out.ptr, n, dst), want, 0.0));
      }
}

// The all-reduce's way into a symmetric window: dst = alpha * src rounded once into dst's dtype, for
// every pair of dtypes (the host computes the product in fp32 and rounds it to nearest even).
TEST(KernelsElementwise, ScaleCastRoundsTheFp32ProductOnce) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  const int64_t n = 65539;
  const std::vector<float> x = random_values(n, rng, 1e-3f, 300.0f);
  for (float alpha : {0.25f, 1.0f / 3.0f})
    for (DType src : kDtypes)
      for (DType dst : kDtypes)
        for (int shift : {0, 1}) {
          SCOPED_TRACE(std::string(dtype_name(src)) + "->" + dtype_name(dst) + " alpha " + std::to_string(alpha) +
                       " shift " + std::to_string(shift));
          std::vector<float> xs = x;
          quantize(xs, src);
          std::vector<float> want(xs.size());
          for (size_t i = 0; i < xs.size(); ++i) want[i] = alpha * xs[i];
          quantize(want, dst);
          Shifted in(xs, src, shift), out(static_cast<size_t>(n), dst, shift);
          kernels::scale_cast(in.ptr, src, out.ptr, dst, alpha, n, nullptr);
          EXPECT_TRUE(all_close(download(out.ptr, n, dst), want, 0.0));
        }
}

TEST(KernelsElementwise, AccumulateIntoF32) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(4);
  const int64_t n = 50001;
  for (DType t : kDtypes)
    for (bool accumulate : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (accumulate ? " +=" : " ="));
      std::vector<float> src = random_values(n, rng), dst = random_values(n, rng);
      quantize(src, t);
      std::vector<float> want(n);
      for (int64_t i = 0; i < n; ++i) want[i] = accumulate ? dst[i] + src[i] : src[i];
      DeviceMem ds = to_device(src, t), dd = to_device(dst, DType::F32);
      kernels::accumulate_into_f32(ds.get(), t, dd.as<float>(), n, accumulate, nullptr);
      EXPECT_TRUE(all_close(download(dd.get(), n, DType::F32), want, 1e-6));
    }
}

TEST(KernelsElementwise, LayoutTransposesMatchHost) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  struct Dims {
    int64_t n, c, h, w;
  };
  for (DType t : kDtypes)
    // Thin matrices too (the thread-per-element path): a 3x3 filter bank, a 1x1 one, a 2x1 image.
    for (Dims d : {Dims{2, 3, 5, 7}, Dims{4, 64, 8, 8}, Dims{3, 33, 6, 6}, Dims{1, 1, 1, 1}, Dims{40, 96, 3, 3},
                   Dims{7, 40, 1, 1}, Dims{5, 70, 2, 1}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(d.c) + "x" + std::to_string(d.h));
      const size_t size = static_cast<size_t>(d.n * d.c * d.h * d.w);
      std::vector<float> x = random_values(size, rng);
      quantize(x, t);
      DeviceMem dx = to_device(x, t), dy(size * dtype_size(t)), dz(size * dtype_size(t));
      dy.poison();
      dz.poison();
      kernels::nchw_to_nhwc(dx.get(), dy.get(), d.n, d.c, d.h, d.w, t, nullptr);
      EXPECT_TRUE(all_close(download(dy.get(), size, t), nchw_to_nhwc(x, d.n, d.c, d.h, d.w), 0.0));
      kernels::nhwc_to_nchw(dy.get(), dz.get(), d.n, d.c, d.h, d.w, t, nullptr);
      EXPECT_TRUE(all_close(download(dz.get(), size, t), x, 0.0));
    }
}

TEST(KernelsElementwise, BiasAddAndBackwardMatchHost) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(6);
  struct Dims {
    int64_t n, c, h, w;
  };
  for (DType t : kDtypes)
    for (DType bias_t : {DType::F32, t})
      for (Layout l : kLayouts)
        for (Dims d : {Dims{3, 5, 7, 3}, Dims{8, 32, 12, 12}, Dims{16, 100, 1, 1}, Dims{2, 40, 4, 4}}) {
          SCOPED_TRACE(case_name(t, l) + " bias " + dtype_name(bias_t) + " c " + std::to_string(d.c) + " hw " +
                       std::to_string(d.h * d.w));
          const size_t size = static_cast<size_t>(d.n * d.c * d.h * d.w);
          std::vector<float> y = random_values(size, rng), bias = random_values(d.c, rng);
          quantize(y, t);
          quantize(bias, bias_t);
          std::vector<float> want(size);
          std::vector<double> dbias(d.c, 0.0);
          for (int64_t a = 0; a < d.n; ++a)
            for (int64_t k = 0; k < d.c; ++k)
              for (int64_t p = 0; p < d.h * d.w; ++p) {
                const size_t i = static_cast<size_t>((a * d.c + k) * d.h * d.w + p);
                want[i] = y[i] + bias[k];
                dbias[k] += y[i];  // y doubles as the incoming gradient below
              }
          DeviceMem db = to_device(bias, bias_t);
          DeviceMem grad = to_device(to_layout(y, l, d.n, d.c, d.h, d.w), t);
          for (int shift : {0, 1}) {  // vector and scalar paths
            Shifted dy(to_layout(y, l, d.n, d.c, d.h, d.w), t, shift);
            kernels::bias_add(dy.ptr, t, db.get(), bias_t, d.n, d.c, d.h, d.w, l, nullptr);
            EXPECT_TRUE(all_close(from_layout(download(dy.ptr, size, t), l, d.n, d.c, d.h, d.w), want,
                                  tolerance(t) / 4)) << "shift " << shift;
          }

          std::vector<float> dbias_f(dbias.begin(), dbias.end()), start = random_values(d.c, rng), acc(d.c);
          for (int64_t k = 0; k < d.c; ++k) acc[k] = start[k] + dbias_f[k];
          DeviceMem out(d.c * 4);
          out.poison();
          kernels::bias_backward(grad.get(), t, out.as<float>(), d.n, d.c, d.h, d.w, l, false, nullptr);
          EXPECT_TRUE(all_close(download(out.get(), d.c, DType::F32), dbias_f, 1e-4));
          upload(start, DType::F32, out.get());
          kernels::bias_backward(grad.get(), t, out.as<float>(), d.n, d.c, d.h, d.w, l, true, nullptr);
          EXPECT_TRUE(all_close(download(out.get(), d.c, DType::F32), acc, 1e-4));
        }
}

}  // namespace
