// Shared helpers of the GPU tests: skipping without a device, device buffers with dtype conversion on
// upload/download, NaN poisoning, host layout transposes, and tolerance checks by dtype.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"

// Skips the current test when no CUDA device can be used (CPU-only CI).
#define SKIP_WITHOUT_GPU()                                                                          \
  do {                                                                                              \
    int sb_device_count_ = 0;                                                                       \
    const cudaError_t sb_status_ = cudaGetDeviceCount(&sb_device_count_);                           \
    if (sb_status_ != cudaSuccess || sb_device_count_ == 0)                                         \
      GTEST_SKIP() << "no CUDA device: "                                                            \
                   << (sb_status_ != cudaSuccess ? cudaGetErrorString(sb_status_) : "0 devices");   \
  } while (0)

// Fails the test (and returns from it) when a CUDA call fails.
#define ASSERT_CUDA(call)                                                                           \
  do {                                                                                              \
    const cudaError_t sb_test_status_ = (call);                                                     \
    ASSERT_EQ(sb_test_status_, cudaSuccess) << #call << ": " << cudaGetErrorString(sb_test_status_); \
  } while (0)

namespace sb::gputest {

inline uint16_t to_half_bits(DType t, float v) {
  return t == DType::F16 ? float_to_fp16_bits(v) : float_to_bf16_bits(v);
}
inline float from_half_bits(DType t, uint16_t b) {
  return t == DType::F16 ? fp16_bits_to_float(b) : bf16_bits_to_float(b);
}

// v rounded to the dtype and back (what the device sees after an upload).
inline float quantize(float v, DType t) { return t == DType::F32 ? v : from_half_bits(t, to_half_bits(t, v)); }
inline void quantize(std::vector<float>& v, DType t) {
  for (float& x : v) x = quantize(x, t);
}

// An owning device allocation (cudaMalloc: 256-byte aligned).
class DeviceMem {
 public:
  DeviceMem() = default;
  explicit DeviceMem(size_t bytes) : bytes_(bytes) {
    if (bytes > 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess) {
      ptr_ = nullptr;
      ADD_FAILURE() << "cudaMalloc of " << bytes << " bytes failed";
    }
  }
  ~DeviceMem() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  DeviceMem(DeviceMem&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  // Every byte 0xFF: NaN in fp32, fp16 and bf16, so an element the kernel forgot shows up.
  // Waits for the memset, which the legacy default stream runs unordered with the tests' non-blocking streams.
  void poison() const {
    EXPECT_EQ(cudaMemset(ptr_, 0xFF, bytes_), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A host-to-device copy that has landed when it returns. cudaMemcpy from pageable memory may return before
// its DMA reaches the device, and it is queued on the legacy default stream, which the tests' non-blocking
// streams do not wait for: without the device-wide wait, their next kernels may read the old bytes (the more
// likely, the busier other processes keep the GPU).
inline void copy_to_device(void* dst, const void* src, size_t bytes) {
  EXPECT_EQ(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Uploads host floats into `dst` (elements of dtype t).
inline void upload(const std::vector<float>& host, DType t, void* dst) {
  if (t == DType::F32) {
    copy_to_device(dst, host.data(), host.size() * 4);
    return;
  }
  std::vector<uint16_t> bits(host.size());
  for (size_t i = 0; i < host.size(); ++i) bits[i] = to_half_bits(t, host[i]);
  copy_to_device(dst, bits.data(), bits.size() * 2);
}
inline DeviceMem to_device(const std::vector<float>& host, DType t) {
  DeviceMem m(host.size() * dtype_size(t));
  upload(host, t, m.get());
  return m;
}
template <typename T>
DeviceMem to_device_raw(const std::vector<T>& host) {
  DeviceMem m(host.size() * sizeof(T));
  copy_to_device(m.get(), host.data(), host.size() * sizeof(T));
  return m;
}
inline std::vector<float> download(const void* src, size_t n, DType t) {
  std::vector<float> out(n);
  cudaDeviceSynchronize();
  if (t == DType::F32) {
    cudaMemcpy(out.data(), src, n * 4, cudaMemcpyDeviceToHost);
  } else {
    std::vector<uint16_t> bits(n);
    cudaMemcpy(bits.data(), src, n * 2, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n; ++i) out[i] = from_half_bits(t, bits[i]);
  }
  return out;
}
template <typename T>
std::vector<T> download_raw(const void* src, size_t n) {
  std::vector<T> out(n);
  cudaDeviceSynchronize();
  cudaMemcpy(out.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost);
  return out;
}

// Uniform values in [lo, hi) with random signs when `signed_values`; never exactly zero.
inline std::vector<float> random_values(size_t n, std::mt19937_64& rng, float lo = 0.1f, float hi = 2.0f,
                                        bool signed_values = true) {
  std::uniform_real_distribution<float> mag(lo, hi);
  std::bernoulli_distribution sign(0.5);
  std::vector<float> v(n);
  for (float& x : v) x = mag(rng) * (signed_values && sign(rng) ? -1.0f : 1.0f);
  return v;
}

// Host transposes of a logical [n, c, h, w] tensor between NCHW and NHWC storage.
inline std::vector<float> nchw_to_nhwc(const std::vector<float>& x, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> y(x.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) y[((a * h + i) * w + j) * c + k] = x[((a * c + k) * h + i) * w + j];
  return y;
}
inline std::vector<float> nhwc_to_nchw(const std::vector<float>& x, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> y(x.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) y[((a * c + k) * h + i) * w + j] = x[((a * h + i) * w + j) * c + k];
  return y;
}
inline std::vector<float> to_layout(const std::vector<float>& nchw, Layout l, int64_t n, int64_t c, int64_t h,
                                    int64_t w) {
  return l == Layout::NCHW ? nchw : nchw_to_nhwc(nchw, n, c, h, w);
}
inline std::vector<float> from_layout(const std::vector<float>& x, Layout l, int64_t n, int64_t c, int64_t h,
                                      int64_t w) {
  return l == Layout::NCHW ? x : nhwc_to_nchw(x, n, c, h, w);
}

// The layer tolerance: fp32 1e-5 relative; fp16/bf16 2e-2.
inline double tolerance(DType t) { return t == DType::F32 ? 1e-5 : 2e-2; }

inline double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

// ||got - want|| / ||want|| (L2), the norm-based error of METHOD.md; NaN when got holds NaN.
inline double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// Element-wise relative comparison: |got - want| <= tol * max(|want|, floor). floor defaults to
// 1e-3 * max|want| (values near zero are judged against the tensor's scale); results that come from a
// cancellation (a - b with a ~ b) pass floor = max_abs(want), i.e. an error relative to the tensor's
// largest value. NaN never passes. Reports the first few failures.
inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want,
                                            double tol, double floor = -1.0) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  if (floor < 0.0) floor = 1e-3 * max_abs(want);
  floor = std::max(floor, 1e-30);
  size_t bad = 0;
  std::string report;
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = want[i];
    const double err = std::fabs(g - r) / std::max(std::fabs(r), floor);
    if (!(err <= tol)) {  // NaN fails
      if (bad < 5)
        report += " [" + std::to_string(i) + "] got " + std::to_string(g) + " want " + std::to_string(r) + ";";
      ++bad;
    }
    if (std::isnan(err)) worst = INFINITY;
    else worst = std::max(worst, err);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements off by more than " << tol
                                       << " (worst relative error " << worst << "):" << report;
}

inline std::string case_name(DType t, Layout l) { return std::string(dtype_name(t)) + "/" + layout_name(l); }

}  // namespace sb::gputest
