# Required host dependencies: MPI, HDF5 (C), zlib, a CBLAS (OpenBLAS), libjpeg (libjpeg-turbo) and libpng.
# Optional: GoogleTest, Google Benchmark.
# On a cluster, point CMake at module-provided installs with MPI_HOME / MPI_CXX_COMPILER, HDF5_ROOT,
# BLAS_ROOT (or CMAKE_PREFIX_PATH), as README.md ("Building on a cluster") explains.
find_package(MPI REQUIRED COMPONENTS CXX)
# We use the C API only; the deprecated MPI C++ bindings would add a link dependency.
add_compile_definitions(OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
find_package(ZLIB REQUIRED)

# The image decoders (src/data/image/): libjpeg-turbo's libjpeg API and libpng.
find_package(JPEG)
if(NOT JPEG_FOUND)
  message(FATAL_ERROR "libjpeg was not found (the image decoders need it): on Debian/Ubuntu apt-get install "
                      "libjpeg-dev (libjpeg-turbo on both); on a cluster module load libjpeg-turbo and "
                      "pass -DJPEG_ROOT=DIR (or CMAKE_PREFIX_PATH)")
endif()
find_package(PNG)
if(NOT PNG_FOUND)
  message(FATAL_ERROR "libpng was not found (the image decoders need it): on Debian/Ubuntu apt-get install libpng-dev; "
                      "on a cluster module load libpng and pass -DPNG_ROOT=DIR (or CMAKE_PREFIX_PATH)")
endif()

set(HDF5_PREFER_PARALLEL OFF)
find_package(HDF5 REQUIRED COMPONENTS C)
add_library(scalebench::hdf5 INTERFACE IMPORTED)
target_include_directories(scalebench::hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
target_link_libraries(scalebench::hdf5 INTERFACE ${HDF5_C_LIBRARIES} ${HDF5_LIBRARIES})
target_compile_definitions(scalebench::hdf5 INTERFACE ${HDF5_DEFINITIONS} H5_USE_110_API_DEFAULT)

# CBLAS: prefer OpenBLAS through pkg-config, fall back to FindBLAS plus a cblas.h on the include path.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(OPENBLAS QUIET IMPORTED_TARGET openblas)
endif()
add_library(scalebench::blas INTERFACE IMPORTED)
if(OPENBLAS_FOUND)
  target_link_libraries(scalebench::blas INTERFACE PkgConfig::OPENBLAS)
else()
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS)
  if(NOT BLAS_FOUND)
    unset(BLA_VENDOR)
    find_package(BLAS REQUIRED)
    message(WARNING "OpenBLAS not found; linking another BLAS: ${BLAS_LIBRARIES}. The CPU backend is then "
            "slower, and netlib's reference BLAS sums outside the CPU tests' fp32 tolerances "
            "(install libopenblas-dev, or load an OpenBLAS module)")
  endif()
  find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas REQUIRED)
  target_include_directories(scalebench::blas INTERFACE ${CBLAS_INCLUDE_DIR})
  target_link_libraries(scalebench::blas INTERFACE ${BLAS_LIBRARIES})
endif()

find_package(GTest)
find_package(benchmark QUIET)
find_package(Threads REQUIRED)
