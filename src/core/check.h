// Error-check macros for the host-side libraries (MPI, HDF5). The CUDA ones are in core/cuda_check.h.
#pragma once
#include <mpi.h>

#include <string>

#include "core/error.h"

namespace sb::detail {
inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}
}  // namespace sb::detail

#define CHECK_MPI(call)                                                                   \
  do {                                                                                    \
    int sb_mpi_status_ = (call);                                                          \
    if (sb_mpi_status_ != MPI_SUCCESS)                                                    \
      ::sb::fatal_call(__FILE__, __LINE__, #call, ::sb::detail::mpi_error_string(sb_mpi_status_)); \
  } while (0)

// HDF5 calls return a negative value (herr_t or hid_t) on failure.
#define CHECK_HDF5(call)                                                                             \
  ([&]() {                                                                                           \
    auto sb_h5_result_ = (call);                                                                     \
    if (sb_h5_result_ < 0) ::sb::fatal_call(__FILE__, __LINE__, #call, "HDF5 returned an error");    \
    return sb_h5_result_;                                                                            \
  }())
