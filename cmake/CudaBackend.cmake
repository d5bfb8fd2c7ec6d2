# The CUDA backend: our kernels (kernels/*.cu) and every src/<folder>/cuda/ source, in one library.
# Device code lives only in kernels/ (docs/kernels.md): the src/ folders contribute host C++ only.
find_package(CUDAToolkit REQUIRED)
file(GLOB sb_cuda_sources CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cu
     ${CMAKE_CURRENT_SOURCE_DIR}/src/*/cuda/*.cpp)
file(GLOB_RECURSE sb_misplaced_kernels CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cu)
if(sb_misplaced_kernels)
  message(FATAL_ERROR "CUDA sources under src/ (${sb_misplaced_kernels}): kernels belong in kernels/, "
                      "behind a header with plain C++ signatures (docs/kernels.md)")
endif()
if(NOT sb_cuda_sources)
  set(sb_cuda_sources ${CMAKE_CURRENT_SOURCE_DIR}/cmake/empty.cu)
endif()
add_library(sb_cuda STATIC ${sb_cuda_sources})
target_include_directories(sb_cuda PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR}
                           ${CUDNN_INCLUDE_DIR} ${NCCL_INCLUDE_DIR})
target_link_libraries(sb_cuda PUBLIC sb_train CUDA::cudart CUDA::cublas CUDA::cublasLt
                      ${CUDNN_LIBRARY} ${NCCL_LIBRARY})
target_link_libraries(sb_cuda PUBLIC ${CMAKE_DL_LIBS})  # NVML is loaded at run time (gpu_energy.cpp)
set_target_properties(sb_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF POSITION_INDEPENDENT_CODE ON)
target_compile_options(sb_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
