#include "comm/sweep_dtype.h"

#include <algorithm>

#include "core/error.h"

namespace sb {
namespace {

constexpr SweepDtype kAllDtypes[] = {SweepDtype::Fp32, SweepDtype::Fp64, SweepDtype::Bf16, SweepDtype::Fp16};

}  // namespace

double max_exact_integer(SweepDtype dtype) {
  switch (dtype) {
    case SweepDtype::Fp32: return 16777216.0;         // 2^24
    case SweepDtype::Fp64: return 9007199254740992.0;  // 2^53
    case SweepDtype::Bf16: return 256.0;              // 2^8
    case SweepDtype::Fp16: return 2048.0;             // 2^11
  }
  return 0;
}

const char* sweep_dtype_name(SweepDtype dtype) {
  switch (dtype) {
    case SweepDtype::Fp32: return "fp32";
    case SweepDtype::Fp64: return "fp64";
    case SweepDtype::Bf16: return "bf16";
    case SweepDtype::Fp16: return "fp16";
  }
  return "?";
}

const char* nccl_tests_type_name(SweepDtype dtype) {
  switch (dtype) {
    case SweepDtype::Fp32: return "float";
    case SweepDtype::Fp64: return "double";
    case SweepDtype::Bf16: return "bfloat16";
    case SweepDtype::Fp16: return "half";
  }
  return "?";
}

int64_t sweep_dtype_bytes(SweepDtype dtype) {
  switch (dtype) {
    case SweepDtype::Fp32: return 4;
    case SweepDtype::Fp64: return 8;
    case SweepDtype::Bf16: return 2;
    case SweepDtype::Fp16: return 2;
  }
  return 1;
}

std::vector<std::string> sweep_dtype_names() {
  std::vector<std::string> names;
  for (SweepDtype d : kAllDtypes) names.emplace_back(sweep_dtype_name(d));  // in code order
  return names;
}

std::vector<SweepDtype> parse_sweep_dtypes(const std::vector<std::string>& names) {
  if (names.empty()) throw UserError("--dtypes needs at least one element type: fp32, fp64, bf16 or fp16");
  std::vector<SweepDtype> dtypes;
  for (const std::string& name : names) {
    const auto* found = std::find_if(std::begin(kAllDtypes), std::end(kAllDtypes),
                                     [&](SweepDtype d) { return name == sweep_dtype_name(d); });
    if (found == std::end(kAllDtypes))
      throw UserError("--dtypes: unknown element type '" + name + "'; valid types: fp32, fp64, bf16, fp16");
    if (std::find(dtypes.begin(), dtypes.end(), *found) != dtypes.end())
      throw UserError("--dtypes lists '" + name + "' twice");
    dtypes.push_back(*found);
  }
  return dtypes;
}

bool mpi_can_reduce(SweepDtype dtype) { return dtype == SweepDtype::Fp32 || dtype == SweepDtype::Fp64; }

MPI_Datatype sweep_mpi_datatype(SweepDtype dtype) { return dtype == SweepDtype::Fp64 ? MPI_DOUBLE : MPI_FLOAT; }

}  // namespace sb
