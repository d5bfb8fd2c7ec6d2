#!/usr/bin/env python3
"""scripts/build.sh runs CMake's configure, build and (with --prefix) install steps with the options it
is given, and refuses bad arguments with a message naming them. A stand-in `cmake` on PATH records the
calls. Run: python3 tests/packaging/test_build_script.py [REPO_ROOT]."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "build.sh")


class BuildScriptTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.log = os.path.join(self.dir.name, "calls")
        fake = os.path.join(self.dir.name, "cmake")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\nprintf "%s\\n" "$*" >> "$CMAKE_CALLS"\n')
        os.chmod(fake, 0o755)

    def tearDown(self):
        self.dir.cleanup()

    def run_script(self, *args):
        env = dict(os.environ, PATH=self.dir.name + os.pathsep + os.environ["PATH"], CMAKE_CALLS=self.log)
        result = subprocess.run([SCRIPT, *args], cwd=self.dir.name, env=env, capture_output=True, text=True)
        if not os.path.exists(self.log):
            return result, []
        with open(self.log) as f:
            return result, f.read().splitlines()

    def test_defaults_configure_release_in_build_and_compile(self):
        result, calls = self.run_script("--jobs", "3")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(calls, [f"-S {ROOT} -B build -DCMAKE_BUILD_TYPE=Release", "--build build -j 3"])

    def test_options_build_dir_and_prefix(self):
        result, calls = self.run_script("--build-dir", "out", "--jobs", "2", "--prefix", "/opt/sb",
                                        "-DSCALEBENCH_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=80;90")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(calls, [
            f"-S {ROOT} -B out -DCMAKE_BUILD_TYPE=Release -DSCALEBENCH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=80;90",
            "--build out -j 2", "--install out --prefix /opt/sb"])

    def test_bad_arguments_are_named(self):
        for args, message in ((["--prefx", "/x"], "unknown argument '--prefx'"),
                              (["--jobs", "0"], "--jobs must be a positive whole number (got '0')"),
                              (["--prefix"], "--prefix needs a value"),
                              (["SCALEBENCH_CUDA=ON"], "-DNAME=VALUE")):
            with self.subTest(args=args):
                result, calls = self.run_script(*args)
                self.assertEqual(result.returncode, 2)
                self.assertIn(message, result.stderr)
                self.assertEqual(calls, [], "nothing runs after a bad argument")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
