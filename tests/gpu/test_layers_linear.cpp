// Linear on the CUDA path (cuBLAS GEMMs; bias kernels) against the CPU reference, fp32 (TF32 off), TF32,
// bf16 and fp16 (fp32 accumulation, dW written in fp32).
#include "test_layers_support.h"

namespace sb::layertest {
namespace {

TEST(CudaLinear, WithBias) {
  SKIP_WITHOUT_GPU();
  check_everywhere({linear("fc", 96, 10, true), Shape{16, 96}}, "linear 96->10 bias", 31);
}

TEST(CudaLinear, WithoutBiasOddSizes) {
  SKIP_WITHOUT_GPU();
  check_everywhere({linear("fc", 37, 53, false), Shape{5, 37}}, "linear 37->53", 32);
}

TEST(CudaLinear, Wide) {
  SKIP_WITHOUT_GPU();
  check_everywhere({linear("fc", 1024, 256, true), Shape{64, 1024}}, "linear 1024->256 bias", 33);
}

}  // namespace
}  // namespace sb::layertest
