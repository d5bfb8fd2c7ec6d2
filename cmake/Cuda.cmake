# SCALEBENCH_CUDA=AUTO builds the CUDA backend when the CUDA toolkit, cuDNN and NCCL are all found.
# Cluster builds point at module installs with CUDAToolkit_ROOT, CUDNN_ROOT and NCCL_ROOT.
set(SCALEBENCH_HAVE_CUDA OFF)
if(NOT SCALEBENCH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  set(sb_cuda_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} /usr/local/cuda)
  find_path(CUDNN_INCLUDE_DIR cudnn_graph.h HINTS ${sb_cuda_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY cudnn HINTS ${sb_cuda_hints} PATH_SUFFIXES lib64 lib)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${sb_cuda_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${sb_cuda_hints} PATH_SUFFIXES lib64 lib)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(SCALEBENCH_HAVE_CUDA ON)
  elseif(SCALEBENCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SCALEBENCH_CUDA=ON but something is missing: nvcc='${CMAKE_CUDA_COMPILER}' "
      "cudnn='${CUDNN_LIBRARY}' (${CUDNN_INCLUDE_DIR}) nccl='${NCCL_LIBRARY}' (${NCCL_INCLUDE_DIR}). "
      "Set CUDAToolkit_ROOT, CUDNN_ROOT and NCCL_ROOT, or build with -DSCALEBENCH_CUDA=OFF.")
  endif()
endif()
if(SCALEBENCH_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # H100/H200; override with -DCMAKE_CUDA_ARCHITECTURES=80;90 etc.
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flag for nvcc; host code is C++20
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  message(STATUS "scalebench: CUDA backend ON (cuDNN ${CUDNN_LIBRARY}, NCCL ${NCCL_LIBRARY}, arch ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "scalebench: CUDA backend OFF")
endif()
