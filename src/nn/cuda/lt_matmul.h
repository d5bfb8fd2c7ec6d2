// cuBLASLt matmuls with epilogues (bias, ReLU + bias, the bias gradient of B), for the layers whose bias
// and ReLU would otherwise be passes of their own. Each distinct matmul (shapes, types, epilogue, the
// pointers' alignment) gets its descriptors and algorithm once. With the context's autotuning that is the
// fastest of the heuristic's first results (up to ContextOptions::autotune_candidates), timed on the first
// call's own operands as the cuDNN plans are (each rank its own: no collective), and one choice per matmul
// for the whole process, so that its layers and rebuilt networks give the same bits. Without it
// (`--autotune off`) it is the heuristic's first result. Autotuning also times a thin product with a long K
// split into slices of K (a strided batch of partial products, then kernels::sum_k_slices with the
// epilogue), which the heuristic does not propose. A matmul for which the heuristic has nothing is
// remembered as unavailable and run() returns false without enqueuing, so the caller takes its cublasGemmEx
// path.
#pragma once
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "nn/cuda/device_buffer.h"

namespace sb::cuda {

class Context;

// Column-major D[m x n] = op(A)[m x k] op(B)[k x n], A and B in `operands`, D in `output`, fp32 scale.
struct LtMatmulShape {
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  DType operands = DType::F32, output = DType::F32;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;  // bias and bias gradients in the output's dtype
};

class LtMatmul {
 public:
  LtMatmul();
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // Enqueues the matmul on `stream` (TF32 only where the context allows it) and returns true, or returns
  // false, enqueuing nothing, when cuBLASLt offers no algorithm for it. bias: the bias (BIAS, RELU_BIAS) or
  // where the bias gradient goes (BGRADB); null otherwise. The workspace is this object's: matmuls that may
  // run at once on two streams need an LtMatmul each.
  bool run(Context& ctx, const LtMatmulShape& shape, const void* a, const void* b, void* d, const void* bias,
           cudaStream_t stream);

 // For tests, which check every candidate against a reference: how many candidates autotuning would time
  // for this matmul (0: none, run() returns false), how many slices of K candidate `candidate` splits the
  // product into (1: not split), and one candidate run as run() would run it.
  size_t candidate_count(Context& ctx, const LtMatmulShape& shape, const void* a, const void* b, void* d,
                         const void* bias);
  int split_slices(Context& ctx, const LtMatmulShape& shape, const void* a, const void* b, void* d, const void* bias,
                   size_t candidate);
  void run_candidate(Context& ctx, const LtMatmulShape& shape, const void* a, const void* b, void* d,
                     const void* bias, size_t candidate, cudaStream_t stream);

 private:
  struct Product;
  struct KSlices;
  struct Plan;
  Plan* plan_for(Context& ctx, const LtMatmulShape& shape, const void* a, const void* b, void* d, const void* bias);
  void describe(Product& product, const LtMatmulShape& shape, bool tf32, cublasLtEpilogue_t epilogue, int64_t depth,
                DType d_type, int32_t batch, const int64_t (&strides)[3]) const;
  std::vector<cublasLtMatmulAlgo_t> proposals(const Product& product, int wanted, const uint32_t (&aligns)[3]) const;
  void add_k_slices(Plan& plan, bool tf32, const void* a, const void* b);
  // Sets plan.choice for good: the process's earlier choice for the key, else the fastest candidate (autotune).
  void choose(Context& ctx, Plan& plan, const void* a, const void* b, void* d, const void* bias, cudaStream_t stream);
  size_t fastest_candidate(const Plan& plan, const void* a, const void* b, void* d, const void* bias,
                           cudaStream_t stream);
  void launch(const Plan& plan, size_t candidate, const void* a, const void* b, void* d, const void* bias,
              cudaStream_t stream);

  cublasLtHandle_t handle_ = nullptr;  // created at the first matmul
  std::map<std::string, std::unique_ptr<Plan>> plans_;
  DeviceBuffer workspace_;
  DeviceBuffer partials_;  // the split products' partial sums (the largest any plan needs)
};

}  // namespace sb::cuda
