// The element types of the `comm` sweep. The enum value is the code in the results file's `dtype` column.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sb {

enum class SweepDtype { Fp32 = 0, Fp64 = 1, Bf16 = 2, Fp16 = 3 };

const char* sweep_dtype_name(SweepDtype dtype);                // "fp32", "fp64", "bf16", "fp16"
const char* nccl_tests_type_name(SweepDtype dtype);            // all_reduce_perf's `type`: "float", "double", "bfloat16", "half"
int64_t sweep_dtype_bytes(SweepDtype dtype);                   // bytes per element
std::vector<std::string> sweep_dtype_names();                  // every name, indexed by code
std::vector<SweepDtype> parse_sweep_dtypes(const std::vector<std::string>& names);  // UserError naming --dtypes
bool mpi_can_reduce(SweepDtype dtype);                         // MPI has no bf16/fp16 arithmetic
MPI_Datatype sweep_mpi_datatype(SweepDtype dtype);             // fp32 and fp64 only
// The largest integer N such that every integer in [0, N] is exact in the dtype (2^(mantissa bits + 1)).
double max_exact_integer(SweepDtype dtype);

}  // namespace sb
