// cuBLASLt matmuls (nn/cuda/lt_matmul.h): every candidate that autotuning may choose, the heuristic's results
// and the products split over K, against a double-precision host product with the same epilogue; the
// fc1 shape of mnist-cnn in fp32 has split candidates; a split candidate gives the same bits every run;
// and kernels::sum_k_slices alone against the host sum in slice order. Fresh random inputs each run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/k_slice_sum.h"
#include "nn/cuda/context.h"
#include "nn/cuda/lt_matmul.h"

namespace {

using namespace sb;
using namespace sb::gputest;

struct Case {
  const char* name;
  cublasOperation_t trans_a, trans_b;
  int64_t m, n, k;
  cublasLtEpilogue_t epilogue;
};

// Column-major element (r, c) of op(X) where X is stored with leading dimension ld.
double element(const std::vector<float>& x, bool transposed, int64_t ld, int64_t r, int64_t c) {
  return transposed ? x[static_cast<size_t>(c + r * ld)] : x[static_cast<size_t>(r + c * ld)];
}

// Checks every candidate of one matmul in `compute` (TF32 off) against the host product; returns the
// largest number of slices any candidate splits K into.
int check_candidates(const Case& c, DType compute, std::mt19937_64& rng) {
  cuda::ContextOptions options;
  options.compute = compute;
  options.tf32 = false;
  cuda::Context ctx(options);
  const bool ta = c.trans_a != CUBLAS_OP_N, tb = c.trans_b != CUBLAS_OP_N;
  const int64_t lda = ta ? c.k : c.m, ldb = tb ? c.n : c.k, ldd = c.m;
  std::vector<float> a = random_values(static_cast<size_t>(c.m * c.k), rng, -1.0f, 1.0f);
  std::vector<float> b = random_values(static_cast<size_t>(c.k * c.n), rng, -1.0f, 1.0f);
  std::vector<float> bias = random_values(static_cast<size_t>(c.m), rng, -1.0f, 1.0f);
  quantize(a, compute);
  quantize(b, compute);
  quantize(bias, compute);
  const DeviceMem da = to_device(a, compute), db = to_device(b, compute), dbias = to_device(bias, compute);
  DeviceMem dd(static_cast<size_t>(c.m * c.n) * dtype_size(compute));
  const bool has_bias = c.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
  const bool relu = c.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;

  std::vector<double> want(static_cast<size_t>(c.m * c.n)), magnitude(want.size());
  for (int64_t j = 0; j < c.n; ++j)
    for (int64_t i = 0; i < c.m; ++i) {
      double sum = has_bias ? bias[static_cast<size_t>(i)] : 0.0, mag = std::fabs(sum);
      for (int64_t p = 0; p < c.k; ++p) {
        const double term = element(a, ta, lda, i, p) * element(b, tb, ldb, p, j);
        sum += term;
        mag += std::fabs(term);
      }
      want[static_cast<size_t>(i + j * ldd)] = relu ? std::max(sum, 0.0) : sum;
      magnitude[static_cast<size_t>(i + j * ldd)] = mag;
    }
  // fp32: the rounding of a K-term fp32 sum in any order; 16-bit outputs: their own rounding on top.
  const double relative = compute == DType::F32 ? 1e-5 : 1e-2;

  cuda::LtMatmul lt;
  const cuda::LtMatmulShape shape{c.trans_a, c.trans_b, c.m, c.n, c.k, lda, ldb, ldd, compute, compute, c.epilogue};
  const void* bias_ptr = has_bias ? dbias.get() : nullptr;
  const size_t candidates = lt.candidate_count(ctx, shape, da.get(), db.get(), dd.get(), bias_ptr);
  EXPECT_GT(candidates, 0u) << c.name << ": cuBLASLt has no algorithm";
  int most_slices = 1;
  for (size_t cand = 0; cand < candidates; ++cand) {
    const int slices = lt.split_slices(ctx, shape, da.get(), db.get(), dd.get(), bias_ptr, cand);
    most_slices = std::max(most_slices, slices);
    dd.poison();
    lt.run_candidate(ctx, shape, da.get(), db.get(), dd.get(), bias_ptr, cand, ctx.stream());
    EXPECT_EQ(cudaStreamSynchronize(ctx.stream()), cudaSuccess);
    const std::vector<float> got = download(dd.get(), want.size(), compute);
    int bad = 0;
    for (size_t e = 0; e < want.size() && bad < 3; ++e) {
      const double err = std::fabs(got[e] - want[e]);
      if (!(err <= relative * magnitude[e] + 1e-6)) {
        ADD_FAILURE() << c.name << " " << dtype_name(compute) << " candidate " << cand << " (" << slices
                      << " slices of K): element " << e << " got " << got[e] << ", want " << want[e];
        ++bad;
      }
    }
    if (slices > 1) {  // the split sums in a fixed order: the same bits again
      lt.run_candidate(ctx, shape, da.get(), db.get(), dd.get(), bias_ptr, cand, ctx.stream());
      EXPECT_EQ(cudaStreamSynchronize(ctx.stream()), cudaSuccess);
      const std::vector<float> again = download(dd.get(), want.size(), compute);
      EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * sizeof(float)), 0)
          << c.name << " candidate " << cand << ": a second run gave other bits";
    }
  }
  return most_slices;
}

TEST(LtMatmul, EveryCandidateAgreesWithTheHostProduct) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(std::random_device{}());
  // mnist-cnn's fc1 forward (y^T = W^T x with ReLU and bias), its dgrad's transposes with a bias epilogue,
  // and a product of odd sizes with no epilogue.
  const Case cases[] = {
      {"fc1 forward", CUBLAS_OP_T, CUBLAS_OP_N, 128, 64, 9216, CUBLASLT_EPILOGUE_RELU_BIAS},
      {"bias, N/N", CUBLAS_OP_N, CUBLAS_OP_N, 96, 40, 2048, CUBLASLT_EPILOGUE_BIAS},
      {"odd sizes, N/T", CUBLAS_OP_N, CUBLAS_OP_T, 37, 53, 1024, CUBLASLT_EPILOGUE_DEFAULT},
  };
  for (const DType compute : {DType::F32, DType::BF16}) {
    for (const Case& c : cases) {
      const int slices = check_candidates(c, compute, rng);
      if (compute == DType::F32 && std::string(c.name) == "fc1 forward") {
        EXPECT_GT(slices, 1) << "no candidate splits fc1's K = 9216 in fp32";
      }
    }
  }
}

TEST(KSliceSum, AddsTheSlicesInOrderThenTheEpilogue) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const int64_t m = 29, n = 13, ldd = 31;
  const int slices = 7;
  const std::vector<float> partials = random_values(static_cast<size_t>(slices * m * n), rng, -1.0f, 1.0f);
  const DeviceMem dp = to_device(partials, DType::F32);
  for (const DType out : {DType::F32, DType::F16, DType::BF16}) {
    for (const bool relu : {false, true}) {
      std::vector<float> bias = random_values(static_cast<size_t>(m), rng, -1.0f, 1.0f);
      quantize(bias, out);
      const DeviceMem dbias = to_device(bias, out);
      DeviceMem dd(static_cast<size_t>(ldd * n) * dtype_size(out));
      dd.poison();
      cudaStream_t stream = nullptr;
      kernels::sum_k_slices(dp.as<float>(), slices, m, n, dd.get(), ldd, out, dbias.get(), relu, stream);
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      const std::vector<float> got = download(dd.get(), static_cast<size_t>(ldd * n), out);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < ldd; ++i) {
          const float g = got[static_cast<size_t>(i + j * ldd)];
          if (i >= m) {  // the rows past m belong to someone else: untouched
            EXPECT_TRUE(std::isnan(g)) << "row " << i << " past m was written";
            continue;
          }
          float sum = 0.0f;
          for (int p = 0; p < slices; ++p) sum += partials[static_cast<size_t>(p * m * n + i + j * m)];
          sum += bias[static_cast<size_t>(i)];
          if (relu) sum = std::max(sum, 0.0f);
          EXPECT_EQ(g, quantize(sum, out)) << dtype_name(out) << " relu " << relu << " at (" << i << ", " << j << ")";
        }
      }
    }
  }
}

}  // namespace
