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

namespace sb::detail {
// Defined with the HDF5 setup (h5/handle.cpp). Reads HDF5's error stack for the file and the
// operating system's reason (e.g. "No space left on device"), says them in one line with a hint, and
// aborts the job through fatal_call. SCALEBENCH_HDF5_TRACE=1 prints the whole stack as well.
[[noreturn]] void hdf5_call_failed(const char* file, int line, const char* call);
}  // namespace sb::detail

// HDF5 calls return a negative value (herr_t or hid_t) on failure.
#define CHECK_HDF5(call)                                                               \
  ([&]() {                                                                             \
    auto sb_h5_result_ = (call);                                                       \
    if (sb_h5_result_ < 0) ::sb::detail::hdf5_call_failed(__FILE__, __LINE__, #call);  \
    return sb_h5_result_;                                                              \
  }())
