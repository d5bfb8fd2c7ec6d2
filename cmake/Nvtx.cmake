# NVTX ranges for Nsight Systems (src/core/nvtx_ranges.h). The nvtx3 headers are header-only and ship with
# the CUDA toolkit; when they are found (CUDA build or not), every build marks its ranges, and without
# them the ranges compile to nothing. SCALEBENCH_NVTX=OFF turns them off.
option(SCALEBENCH_NVTX "Mark NVTX ranges when the nvtx3 headers are found" ON)
set(SCALEBENCH_HAVE_NVTX OFF)
if(SCALEBENCH_NVTX)
  find_path(SCALEBENCH_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT} $ENV{CUDA_HOME} /usr/local/cuda PATH_SUFFIXES include)
  if(SCALEBENCH_NVTX_INCLUDE_DIR)
    set(SCALEBENCH_HAVE_NVTX ON)
  endif()
endif()
message(STATUS "scalebench: NVTX ranges ${SCALEBENCH_HAVE_NVTX} (${SCALEBENCH_NVTX_INCLUDE_DIR})")

function(scalebench_use_nvtx target)
  if(SCALEBENCH_HAVE_NVTX)
    # nvtx3 loads an NVTX tool (Nsight, NVTX_INJECTION64_PATH) with dlopen.
    target_include_directories(${target} SYSTEM PUBLIC ${SCALEBENCH_NVTX_INCLUDE_DIR})
    target_compile_definitions(${target} PUBLIC SCALEBENCH_HAVE_NVTX=1)
    target_link_libraries(${target} PUBLIC ${CMAKE_DL_LIBS})
  endif()
endfunction()
