# The CUDA backend: one static library per layer, each linking only the layers below it
# (docs/architecture.md):
#   sb_kernels    kernels/*.cu           core, maths (the SB_HOST_DEVICE maths the CPU code computes too)
#   sb_nn_cuda    src/nn/cuda/           kernels, nn: the CUDA layers over cuDNN and cuBLAS
#   sb_comm_cuda  src/comm/cuda/         comm: the NCCL communicator and sweep
#   sb_data_cuda  src/data/cuda/         data, nn_cuda: the input pipeline on the GPU, nvJPEG's decoder
#   sb_cuda       src/train/engines/cuda/, src/train/engines/dp/cuda/ and any other src/<folder>/cuda/: the CUDA engines, on train,
#                 data_cuda and comm_cuda; the program and the GPU tests link this one
# Device code lives only in kernels/ (docs/kernels.md): the src/ folders contribute host C++ only.
find_package(CUDAToolkit REQUIRED)
file(GLOB_RECURSE sb_misplaced_kernels CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cu)
if(sb_misplaced_kernels)
  message(FATAL_ERROR "CUDA sources under src/ (${sb_misplaced_kernels}): kernels belong in kernels/, "
                      "behind a header with plain C++ signatures (docs/kernels.md)")
endif()

# What every CUDA-backend source compiles and links against: core/cuda_check.h includes the headers of
# cuBLAS, NCCL and cuDNN alike.
add_library(sb_cuda_toolkit INTERFACE)
target_include_directories(sb_cuda_toolkit INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR}
                           ${CUDNN_INCLUDE_DIR} ${NCCL_INCLUDE_DIR})
target_link_libraries(sb_cuda_toolkit INTERFACE CUDA::cudart CUDA::cublas CUDA::cublasLt ${CUDNN_LIBRARY} ${NCCL_LIBRARY})

# sb_cuda_layer(<name> <sources> <libraries below it>...)
function(sb_cuda_layer name sources)
  if(NOT sources)
    set(sources ${CMAKE_CURRENT_SOURCE_DIR}/cmake/empty.cu)
  endif()
  add_library(${name} STATIC ${sources})
  target_link_libraries(${name} PUBLIC sb_cuda_toolkit ${ARGN})
  set_target_properties(${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF POSITION_INDEPENDENT_CODE ON)
  if(sources MATCHES "\\.cpp")
    scalebench_precompile(${name})
  endif()
endfunction()

file(GLOB sb_kernels_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cu)
file(GLOB sb_nn_cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/nn/cuda/*.cpp)
file(GLOB sb_comm_cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/comm/cuda/*.cpp)
file(GLOB sb_data_cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/data/cuda/*.cpp)
file(GLOB sb_cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*/cuda/*.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/train/engines/cuda/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/src/train/engines/dp/cuda/*.cpp)
list(FILTER sb_cuda_sources EXCLUDE REGEX "/src/(nn|comm|data)/cuda/[^/]*$")

sb_cuda_layer(sb_kernels "${sb_kernels_sources}" sb_maths)
target_compile_options(sb_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
# The fused optimizer updates a range 4 elements at a time or one at a time (a range at a misaligned
# offset: an optimizer-overlap bucket); left to contract a * b + c into an FMA, nvcc contracted the two
# paths differently and a split update differed from the whole one in the last bit. Without contraction
# both round every product and sum alike, as the CPU optimizers do. The kernel is memory-bound.
# The resized-crop kernel must round its filter sums as the CPU resampler does (kernels/resized_crop.h).
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/kernels/optimizer.cu ${CMAKE_CURRENT_SOURCE_DIR}/kernels/resized_crop.cu
                            PROPERTIES COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>")
sb_cuda_layer(sb_nn_cuda "${sb_nn_cuda_sources}" sb_kernels sb_nn)
sb_cuda_layer(sb_comm_cuda "${sb_comm_cuda_sources}" sb_comm)
sb_cuda_layer(sb_data_cuda "${sb_data_cuda_sources}" sb_data sb_nn_cuda sb_kernels)
sb_cuda_layer(sb_cuda "${sb_cuda_sources}" sb_train sb_data_cuda sb_nn_cuda sb_comm_cuda sb_kernels
              ${CMAKE_DL_LIBS})  # NVML is loaded at run time (gpu_energy.cpp)

# nvJPEG (GPU JPEG decoding, src/data/cuda/nvjpeg_decoder.h) ships with the CUDA toolkit, but not every
# install of the toolkit has it. SCALEBENCH_NVJPEG=AUTO builds it in when nvjpeg.h and libnvjpeg are found;
# ON insists. SCALEBENCH_HAVE_NVJPEG=1 is PUBLIC on sb_data_cuda, whose decoder uses it, and so reaches
# sb_cuda, the program and the tests, which compile their nvJPEG parts by it.
if(NOT SCALEBENCH_NVJPEG STREQUAL "OFF")
  find_path(NVJPEG_INCLUDE_DIR nvjpeg.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(TARGET CUDA::nvjpeg)
    set(sb_nvjpeg_library CUDA::nvjpeg)
  else()  # a toolkit with only the versioned library, without the libnvjpeg.so link
    find_library(NVJPEG_LIBRARY NAMES nvjpeg libnvjpeg.so.${CUDAToolkit_VERSION_MAJOR}
                 HINTS ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)
    set(sb_nvjpeg_library ${NVJPEG_LIBRARY})
  endif()
  if(NVJPEG_INCLUDE_DIR AND sb_nvjpeg_library)
    set(SCALEBENCH_HAVE_NVJPEG ON)
  elseif(SCALEBENCH_NVJPEG STREQUAL "ON")
    message(FATAL_ERROR "SCALEBENCH_NVJPEG=ON but the CUDA toolkit lacks nvJPEG: nvjpeg.h='${NVJPEG_INCLUDE_DIR}' "
      "(searched ${CUDAToolkit_INCLUDE_DIRS}), libnvjpeg='${sb_nvjpeg_library}' (searched ${CUDAToolkit_LIBRARY_DIR}). "
      "Install the toolkit's nvJPEG development package, point CUDAToolkit_ROOT at a toolkit that has it, "
      "or configure with -DSCALEBENCH_NVJPEG=OFF.")
  endif()
endif()
if(SCALEBENCH_HAVE_NVJPEG)
  target_include_directories(sb_data_cuda PUBLIC ${NVJPEG_INCLUDE_DIR})
  target_link_libraries(sb_data_cuda PUBLIC ${sb_nvjpeg_library})
  target_compile_definitions(sb_data_cuda PUBLIC SCALEBENCH_HAVE_NVJPEG=1)
  message(STATUS "scalebench: nvJPEG built in (${NVJPEG_INCLUDE_DIR}/nvjpeg.h, ${sb_nvjpeg_library})")
else()
  message(STATUS "scalebench: nvJPEG not built in (SCALEBENCH_NVJPEG=${SCALEBENCH_NVJPEG}); JPEGs decode on the CPU only")
endif()
