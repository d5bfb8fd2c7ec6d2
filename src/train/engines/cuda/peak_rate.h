// The card's measured matrix rate in the run's compute precision, for MFU (model FLOPs utilisation):
// a square GEMM through cuBLAS on pseudo-random operands, timed with events after a warm-up. The rate of
// a card, driver, library and precision does not change between runs, so it is kept in the cache folder
// (train/engines/peak_rate_cache.h) and measured once.
#pragma once
#include <string>

#include "core/dtype.h"

namespace sb {

// The GEMM's size: large enough that cuBLAS reaches the card's rate (a smaller one understates the peak
// and so overstates MFU).
inline constexpr int kPeakGemmSize = 8192;

// TFLOP/s of an n x n x n GEMM on the current device (fp32 with TF32 when tf32, else the dtype's
// tensor-core path).
double measure_gemm_tflops(DType dtype, bool tf32, int n = kPeakGemmSize);

// What the rate of `device` depends on, as the peak-rate cache's key: the card's name, SM count and
// clock, the driver, CUDA runtime and cuBLAS versions, the dtype, TF32 and the GEMM's size.
std::string peak_rate_key(int device, DType dtype, bool tf32, int n = kPeakGemmSize);

// The rate of `device` (the current device) from the peak-rate cache in `cache_folder`, else measured and
// stored there; "" (--no-plan-cache): measured every time.
double peak_gemm_tflops(int device, DType dtype, bool tf32, const std::string& cache_folder);

}  // namespace sb
