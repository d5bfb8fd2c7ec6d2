// The card's measured matrix rate in the run's compute precision, for MFU (model FLOPs utilisation):
// a square GEMM through cuBLAS on random data, timed with events after a warm-up.
#pragma once
#include "core/dtype.h"

namespace sb {
// TFLOP/s of an n x n x n GEMM (fp32 with TF32 when tf32, else the dtype's tensor-core path).
double measure_gemm_tflops(DType dtype, bool tf32, int n = 8192);
}  // namespace sb
