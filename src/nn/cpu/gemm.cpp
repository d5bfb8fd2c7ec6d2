#include "nn/cpu/gemm.h"

#include <cblas.h>

#include <climits>
#include <string>

#include "core/error.h"

namespace sb::cpu {
namespace {

// CBLAS takes 32-bit sizes; a larger matrix would silently wrap.
int blas_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    fatal(std::string("gemm: ") + what + " = " + std::to_string(v) + " does not fit a BLAS int");
  return static_cast<int>(v);
}

CBLAS_TRANSPOSE to_cblas(Trans t) { return t == Trans::No ? CblasNoTrans : CblasTrans; }

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float* a, int lda,
               const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha, const double* a, int lda,
               const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

template <typename T>
void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;  // BLAS would reject the zero leading dimensions of an empty product
  if (k == 0) {                  // an empty sum: C = beta * C, with beta == 0 overwriting garbage
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  blas_gemm(to_cblas(trans_a), to_cblas(trans_b), blas_int(m, "m"), blas_int(n, "n"), blas_int(k, "k"), alpha, a,
            blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c, blas_int(ldc, "ldc"));
}

template void gemm<float>(Trans, Trans, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                          int64_t, float, float*, int64_t);
template void gemm<double>(Trans, Trans, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);

}  // namespace sb::cpu
