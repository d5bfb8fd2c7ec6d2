#!/usr/bin/env python3
"""The Spack package (packaging/spack) imports under a stub of Spack's directives (spack_stub.py),
declares the dependencies the build needs, and maps its variants to the CMake options the project
reads. Run: python3 tests/packaging/test_spack_package.py [REPO_ROOT]."""
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".."))
REPO = os.path.join(ROOT, "packaging", "spack", "spack_repo", "scalebench")
PACKAGE = os.path.join(REPO, "packages", "scalebench", "package.py")
sys.path.insert(0, HERE)
import container_recipes  # noqa: E402
import spack_stub  # noqa: E402


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def cmake_options(args):
    """{NAME: VALUE} of -DNAME[:TYPE]=VALUE arguments."""
    out = {}
    for a in args:
        m = re.fullmatch(r"-D([A-Za-z_][\w]*)(?::\w+)?=(.*)", a)
        assert m, f"not a -D option: {a}"
        out[m.group(1)] = m.group(2)
    return out


def project_cmake_text():
    names = [os.path.join(ROOT, "CMakeLists.txt")]
    names += [os.path.join(ROOT, "cmake", n) for n in sorted(os.listdir(os.path.join(ROOT, "cmake")))
              if n.endswith(".cmake")]
    return "\n".join(read(n) for n in names)


class SpackPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cls = spack_stub.load_package(PACKAGE).Scalebench

    def package(self, run_tests=False, **given):
        """The package on a spec of the variants' defaults, with `given` set."""
        values = {}
        for _ in range(2):  # a second pass for variants that depend on another (nvtx on +cuda)
            spec = spack_stub.Spec(**values)
            for v in self.cls.declared("variant"):
                if v["name"] in given:
                    values[v["name"]] = given[v["name"]]
                elif not v["when"] or spec.satisfies(v["when"]):
                    values.setdefault(v["name"], v["default"] if v["values"] is None else ())
        return self.cls(spack_stub.Spec(**values), run_tests=run_tests)

    def dependencies(self, package, kind=None):
        return {d["name"] for d in package.active("depends_on") if kind is None or kind in d["type"]}

    def test_it_is_a_cmake_and_cuda_package_built_from_main(self):
        self.assertTrue(issubclass(self.cls, spack_stub.CMakePackage))
        self.assertTrue(issubclass(self.cls, spack_stub.CudaPackage))
        versions = self.cls.declared("version")
        self.assertEqual([(v["name"], v["source"]) for v in versions], [("main", {"branch": "main"})])
        self.assertTrue(os.path.isfile(os.path.join(self.cls.git[len("file://"):], "CMakeLists.txt")),
                        f"git = {self.cls.git} is not this checkout")
        self.assertTrue(os.path.isfile(os.path.join(REPO, "repo.yaml")))

    def test_dependencies_without_cuda(self):
        package = self.package(cuda=False)
        self.assertEqual(self.dependencies(package, "link"), {"mpi", "hdf5", "zlib-api", "jpeg", "libpng", "blas"})
        self.assertIn("cmake", self.dependencies(package, "build"))
        self.assertEqual(self.dependencies(package, "test"), {"googletest"})
        hdf5 = [d["spec"] for d in package.active("depends_on") if d["name"] == "hdf5"]
        self.assertEqual(hdf5, ["hdf5@1.10: ~mpi"], "serial HDF5 with the 1.10 API")

    def test_dependencies_with_cuda(self):
        package = self.package(cuda=True, cuda_arch=("90",))
        self.assertLessEqual({"cuda", "cudnn", "nccl", "mpi", "hdf5", "zlib-api", "jpeg", "libpng", "blas"},
                             self.dependencies(package, "link"))
        nccl = {d["spec"] for d in package.active("depends_on") if d["name"] == "nccl"}
        self.assertIn("nccl +cuda cuda_arch=90", nccl, "NCCL is built for the same GPUs")
        self.assertNotIn("nccl +cuda cuda_arch=80", nccl)

    def test_cmake_args_with_cuda_arch_90(self):
        options = cmake_options(self.package(cuda=True, cuda_arch=("90",)).cmake_args())
        self.assertEqual(options["SCALEBENCH_CUDA"], "ON")
        self.assertEqual(options["CMAKE_CUDA_ARCHITECTURES"], "90")
        self.assertEqual(options["CUDNN_ROOT"], "/spack/opt/cudnn")
        self.assertEqual(options["NCCL_ROOT"], "/spack/opt/nccl")
        self.assertEqual(options["CUDAToolkit_ROOT"], "/spack/opt/cuda")
        self.assertEqual(options["CMAKE_CUDA_COMPILER"], "/spack/opt/cuda/bin/nvcc")
        self.assertEqual(options["SCALEBENCH_NVTX"], "ON")
        self.assertEqual(options["SCALEBENCH_TESTS"], "OFF")
        self.assertEqual(options["MPI_CXX_COMPILER"], "/spack/opt/mpi/bin/mpicxx")

    def test_cmake_args_with_several_architectures(self):
        options = cmake_options(self.package(cuda=True, cuda_arch=("80", "90")).cmake_args())
        self.assertEqual(options["CMAKE_CUDA_ARCHITECTURES"], "80;90")

    def test_cmake_args_without_cuda(self):
        options = cmake_options(self.package(cuda=False, benchmarks=True).cmake_args())
        self.assertEqual(options["SCALEBENCH_CUDA"], "OFF")
        self.assertEqual(options["SCALEBENCH_BENCH"], "ON")
        for name in ("CMAKE_CUDA_ARCHITECTURES", "CMAKE_CUDA_COMPILER", "CUDNN_ROOT", "NCCL_ROOT",
                     "CUDAToolkit_ROOT"):
            self.assertNotIn(name, options)

    def test_spack_tests_build_the_tests(self):
        options = cmake_options(self.package(run_tests=True, cuda=False).cmake_args())
        self.assertEqual(options["SCALEBENCH_TESTS"], "ON")

    def test_cuda_without_an_architecture_is_refused(self):
        refused = [c for c in self.cls.declared("conflicts") if c["spec"] == "cuda_arch=none"]
        self.assertEqual([c["when"] for c in refused], ["+cuda"])
        self.assertIn("cuda_arch=90", refused[0]["msg"])

    def test_every_option_is_one_the_project_reads(self):
        cmake_text = project_cmake_text()
        documented = container_recipes.readme_cmake_variables(ROOT)
        args = self.package(cuda=True, cuda_arch=("90",)).cmake_args() + self.package(cuda=False).cmake_args()
        for name in cmake_options(args):
            with self.subTest(name=name):
                self.assertTrue(name in documented or re.search(rf"\b{name}\b", cmake_text),
                                f"{name} is neither in the CMake files nor in README.md's table")

    def test_the_stub_evaluates_conditions(self):
        spec = spack_stub.Spec(cuda=True, cuda_arch=("80", "90"))
        self.assertTrue(spec.satisfies("+cuda cuda_arch=90"))
        self.assertTrue(spec.satisfies("cuda_arch=80,90"))
        self.assertFalse(spec.satisfies("~cuda"))
        self.assertFalse(spec.satisfies("cuda_arch=100"))
        self.assertEqual(cmake_options(["-DA:BOOL=ON", "-DB=x"]), {"A": "ON", "B": "x"})


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
