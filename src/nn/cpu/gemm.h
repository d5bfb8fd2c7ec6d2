// A typed wrapper over CBLAS's sgemm/dgemm for row-major matrices, so that templated layers can call one
// name for float and double.
#pragma once
#include <cstdint>

namespace sb::cpu {

enum class Trans { No, Yes };

// C[m x n] = alpha * op(A) * op(B) + beta * C, row-major, where op(A) is m x k and op(B) is k x n.
// lda, ldb and ldc are the row strides of A, B and C as stored (before op). With beta == 0, C may hold
// garbage (NaN included) on entry.
template <typename T>
void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// The same for densely packed matrices (each leading dimension is the stored row length).
template <typename T>
void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, const T* b, T beta,
          T* c) {
  const int64_t lda = trans_a == Trans::No ? k : m;
  const int64_t ldb = trans_b == Trans::No ? n : k;
  gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
}

}  // namespace sb::cpu
