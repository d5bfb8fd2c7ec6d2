# Spack package of scalebench (packaging/spack/README.md says how to use it).
import os

from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

from spack.package import *

# The checkout this file lives in (packaging/spack/spack_repo/scalebench/packages/scalebench/).
CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 6))


class Scalebench(CMakePackage, CudaPackage):
    """How well data-parallel training scales from 1 to 8 GPUs and beyond: one SPMD program (MPI
    bootstraps the ranks, NCCL all-reduces the gradients, layers on cuDNN and cuBLAS) with a CPU
    backend computing the same maths, results in HDF5."""

    # There is no release yet: the main branch of the checkout that holds this repository.
    git = "file://" + CHECKOUT
    version("main", branch="main")

    variant("nvtx", default=True, when="+cuda", description="Mark NVTX ranges for Nsight Systems")
    variant("benchmarks", default=False, description="Build the Google Benchmark micro-benchmarks")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.24:", type="build")
    depends_on("pkgconfig", type="build")  # finds OpenBLAS's cblas.h
    depends_on("mpi")
    depends_on("hdf5@1.10: ~mpi")  # the C library; results and checkpoints are written by rank 0 alone
    depends_on("zlib-api")
    depends_on("jpeg")  # the image decoders: libjpeg-turbo (or another libjpeg provider)
    depends_on("libpng")
    depends_on("blas")
    depends_on("googletest", type="test")
    depends_on("benchmark", when="+benchmarks")

    with when("+cuda"):
        depends_on("cudnn@9:")  # the graph API
        depends_on("nccl")
        for arch in CudaPackage.cuda_arch_values:
            depends_on(f"nccl +cuda cuda_arch={arch}", when=f"cuda_arch={arch}")
    conflicts("cuda_arch=none", when="+cuda",
              msg="+cuda needs the GPU generations to compile for, e.g. cuda_arch=90 (H100, H200, "
                  "GH200) or cuda_arch=80,90")

    def cmake_args(self):
        spec = self.spec
        cuda = spec.satisfies("+cuda")
        args = [
            self.define("SCALEBENCH_CUDA", "ON" if cuda else "OFF"),
            self.define("SCALEBENCH_TESTS", self.run_tests),
            self.define_from_variant("SCALEBENCH_BENCH", "benchmarks"),
            self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx),
            self.define("HDF5_ROOT", spec["hdf5"].prefix),
        ]
        if cuda:
            args += [
                self.define("CMAKE_CUDA_ARCHITECTURES", list(spec.variants["cuda_arch"].value)),
                self.define("CMAKE_CUDA_COMPILER", spec["cuda"].prefix.bin.nvcc),
                self.define("CUDAToolkit_ROOT", spec["cuda"].prefix),
                self.define("CUDNN_ROOT", spec["cudnn"].prefix),
                self.define("NCCL_ROOT", spec["nccl"].prefix),
                self.define_from_variant("SCALEBENCH_NVTX", "nvtx"),
            ]
        else:
            args.append(self.define("SCALEBENCH_NVTX", False))
        return args
