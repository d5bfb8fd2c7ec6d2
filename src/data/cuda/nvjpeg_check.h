// CHECK_NVJPEG, in the style of core/cuda_check.h: a failed nvJPEG call prints the rank, host, file, line,
// call and the status in words, then aborts the job. Include only where SCALEBENCH_HAVE_NVJPEG is defined.
#pragma once
#include <nvjpeg.h>

#include <string>

#include "core/error.h"

namespace sb::detail {

// "NVJPEG_STATUS_BAD_JPEG (the stream is corrupt or not a JPEG)"; an unknown value is named by number.
inline std::string nvjpeg_status_string(nvjpegStatus_t status) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED (the library handle is not initialised)";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER (a wrong argument)";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG (the stream is corrupt or not a JPEG)";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED (a JPEG type nvJPEG does not decode)";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE (a device or pinned allocation failed)";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED (the decode's device work failed)";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH (the device lacks what this backend needs)";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR (an error inside nvJPEG)";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED (not implemented for this backend)";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM (the stream is cut short)";
  }
  return "nvjpegStatus_t " + std::to_string(static_cast<int>(status));
}

}  // namespace sb::detail

#define CHECK_NVJPEG(call)                                                                               \
  do {                                                                                                   \
    nvjpegStatus_t sb_nvjpeg_status_ = (call);                                                           \
    if (sb_nvjpeg_status_ != NVJPEG_STATUS_SUCCESS)                                                      \
      ::sb::fatal_call(__FILE__, __LINE__, #call, ::sb::detail::nvjpeg_status_string(sb_nvjpeg_status_)); \
  } while (0)
