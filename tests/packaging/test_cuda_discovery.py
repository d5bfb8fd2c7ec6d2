"""cmake/Cuda.cmake finds cuDNN and NCCL in the `nvidia` wheels of a python3 (PyTorch's layout: nvidia/cudnn
and nvidia/nccl with include/ and lib/, versioned sonames only) where the usual places lack them, and says in
the build folder's cuda_backend.txt why the CUDA backend is off. The system's own folders are hidden from the
searches with CMAKE_IGNORE_PATH, so the test holds on machines with and without cuDNN installed.

usage: test_cuda_discovery.py REPO_ROOT"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.abspath(os.path.join(__file__, "../../.."))
# Every folder where a system's cuDNN, NCCL or CUDA toolkit could be found, hidden from find_path/find_library,
# by the names given and by the folders they resolve to (/usr/local/cuda is often a link to /usr/local/cuda-13.0).
CUDA_SUBFOLDERS = ["lib64", "lib", "include", "targets/x86_64-linux/lib", "targets/x86_64-linux/include"]
CUDA_ROOTS = ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"))
SYSTEM_FOLDERS = sorted({folder for path in [os.path.join(root, sub) for root in CUDA_ROOTS for sub in CUDA_SUBFOLDERS]
                         + ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/include", "/usr/local/lib",
                            "/usr/local/include"]
                         for folder in (path, os.path.realpath(path))})


class CudaDiscovery(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sb-cuda-discovery-")
        self.project = os.path.join(self.tmp, "project")
        os.makedirs(self.project)
        with open(os.path.join(self.project, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.24)\nproject(probe LANGUAGES C CXX)\n"
                    f"include({REPO}/cmake/Cuda.cmake)\n")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def make_wheels(self):
        """A site folder holding a namespace package `nvidia` laid out as PyTorch's wheels are."""
        site = os.path.join(self.tmp, "site")
        for library, header, soname in (("cudnn", "cudnn_graph.h", "libcudnn.so.9"), ("nccl", "nccl.h", "libnccl.so.2")):
            for sub, name in (("include", header), ("lib", soname)):
                os.makedirs(os.path.join(site, "nvidia", library, sub), exist_ok=True)
                open(os.path.join(site, "nvidia", library, sub, name), "w").close()
        return site

    def configure(self, python_path, wheel_python):
        build = os.path.join(self.tmp, "build")
        env = dict(os.environ, PYTHONPATH=python_path, CUDNN_ROOT="", NCCL_ROOT="")
        result = subprocess.run(["cmake", "-S", self.project, "-B", build, f"-DCMAKE_IGNORE_PATH={';'.join(SYSTEM_FOLDERS)}",
                                 f"-DSCALEBENCH_WHEEL_PYTHON={wheel_python}"],
                                env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        cache = {}
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if "=" in line and ":" in line.split("=", 1)[0]:
                    key, value = line.rstrip("\n").split("=", 1)
                    cache[key.split(":")[0]] = value
        with open(os.path.join(build, "cuda_backend.txt")) as f:
            return cache, f.read(), result.stdout

    def test_finds_cudnn_and_nccl_in_the_wheels_by_their_versioned_sonames(self):
        site = self.make_wheels()
        cache, _, _ = self.configure(site, sys.executable)
        self.assertEqual(cache["CUDNN_LIBRARY"], os.path.join(site, "nvidia", "cudnn", "lib", "libcudnn.so.9"))
        self.assertEqual(cache["CUDNN_INCLUDE_DIR"], os.path.join(site, "nvidia", "cudnn", "include"))
        self.assertEqual(cache["NCCL_LIBRARY"], os.path.join(site, "nvidia", "nccl", "lib", "libnccl.so.2"))
        self.assertEqual(cache["NCCL_INCLUDE_DIR"], os.path.join(site, "nvidia", "nccl", "include"))

    def test_says_why_the_backend_is_off_when_no_python_has_the_wheels(self):
        _, reason, stdout = self.configure(os.path.join(self.tmp, "empty"), sys.executable)
        self.assertTrue(reason.startswith("OFF: not found:"), reason)
        self.assertIn("cuDNN", reason)
        self.assertIn(f"{sys.executable} imports no nvidia wheels", reason)
        self.assertIn("CUDNN_ROOT", reason)
        self.assertIn("scalebench: CUDA backend OFF (not found:", stdout)


if __name__ == "__main__":
    if shutil.which("cmake") is None:
        print("no cmake on PATH: skipped")
        sys.exit(0)
    unittest.main()
