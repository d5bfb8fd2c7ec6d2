#!/usr/bin/env python3
"""The container recipes of jobs/container/ build the way README.md builds: both run scripts/build.sh,
neither runs CMake's steps itself, and the Dockerfile and the Apptainer definition agree on the base
image, the sources and the CMake options. The Dockerfile passes a syntax check (dockerfile.py) and its
RUN steps pass shellcheck when it is installed.
Run: python3 tests/packaging/test_container_recipes.py [REPO_ROOT]."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import container_recipes as recipes  # noqa: E402
import dockerfile  # noqa: E402

DOCKERFILE = os.path.join(ROOT, "jobs", "container", "Dockerfile")


class BuildStepsTest(unittest.TestCase):
    def recipes(self):
        return {"README.md": recipes.readme_build_commands(ROOT),
                "Dockerfile": recipes.docker_build_commands(ROOT),
                "scalebench.def": recipes.apptainer_build_commands(ROOT)}

    def test_every_recipe_builds_with_the_build_script_once(self):
        for name, commands in self.recipes().items():
            with self.subTest(recipe=name):
                self.assertEqual(len(recipes.build_script_calls(commands)), 1,
                                 f"{name} should run {recipes.BUILD_SCRIPT} once: {commands}")
                self.assertEqual(recipes.cmake_calls(commands), [],
                                 f"{name} runs CMake's steps itself instead of {recipes.BUILD_SCRIPT}")

    def test_build_script_arguments_are_its_options_and_known_cmake_variables(self):
        documented = recipes.readme_cmake_variables(ROOT)
        cmake_text = recipes.read(os.path.join(ROOT, "CMakeLists.txt"))
        script = recipes.read(os.path.join(ROOT, recipes.BUILD_SCRIPT))
        for name, commands in self.recipes().items():
            for args in recipes.build_script_calls(commands):
                with self.subTest(recipe=name):
                    for flag in recipes.build_script_flags(args):
                        self.assertIn(f"    {flag})", script, f"{name} passes {flag}, which build.sh does not take")
                    for var in recipes.cmake_definitions(args):
                        self.assertTrue(var in documented or var in cmake_text,
                                        f"{name} sets {var}, which README.md's table of CMake variables lacks")

    def test_the_two_images_build_alike(self):
        (docker,) = recipes.build_script_calls(recipes.docker_build_commands(ROOT))
        (apptainer,) = recipes.build_script_calls(recipes.apptainer_build_commands(ROOT))
        self.assertEqual(recipes.cmake_definitions(docker), recipes.cmake_definitions(apptainer))
        self.assertEqual(recipes.cmake_definitions(docker)["SCALEBENCH_CUDA"], "ON")
        self.assertEqual(recipes.docker_source_copies(ROOT), recipes.apptainer_source_copies(ROOT))

    def test_the_two_images_start_from_the_same_cuda_image(self):
        devel = recipes.docker_image(ROOT, "build")
        self.assertEqual(devel, recipes.apptainer_sections(ROOT)["From"])
        self.assertIn("-cudnn-devel-", devel)
        self.assertEqual(recipes.docker_image(ROOT, "runtime"), devel.replace("-devel-", "-runtime-"))

    def test_the_parser_sees_through_continuations_and_substitutions(self):
        commands = recipes.shell_commands('a -DX=$(which y) \\\n  -DZ="1;2" && b # c\nscripts/build.sh -DQ=1\n')
        self.assertEqual(commands, [["a", "-DX=CMDSUBST", "-DZ=1;2"], ["b"], ["scripts/build.sh", "-DQ=1"]])
        self.assertEqual(recipes.cmake_calls([["cmake", "-S", ".", "-B", "b"], ["cmake", "--install", "b"]]),
                         [["cmake", "-S", ".", "-B", "b"]])


class DockerfileSyntaxTest(unittest.TestCase):
    def test_the_dockerfile_passes(self):
        self.assertEqual(dockerfile.check(recipes.read(DOCKERFILE), ROOT), [])

    def test_the_check_catches_mistakes(self):
        cases = {
            "RUN true\nFROM x\n": "before the first FROM",
            "FROM x\nRUNN true\n": "unknown instruction RUNN",
            "FROM x AS a\nFROM y AS a\n": "used twice",
            "FROM x AS a\nFROM y\nCOPY --from=bulid /a /b\n": "names no earlier stage",
            "FROM x AS a\nCOPY --from=a /a /b\n": "names no earlier stage",
            "FROM x:${TAG}\n": "no ARG before the first FROM",
            "FROM x\nCMD [\"a\", 1]\n": "list of strings",
            "FROM x\nCOPY no/such/file /b\n": "not in the build context",
            "FROM x\nCOPY /b\n": "at least one source",
            "ARG A=1\n": "no FROM",
        }
        for text, expected in cases.items():
            with self.subTest(dockerfile=text):
                errors = dockerfile.check(text, ROOT)
                self.assertTrue(any(expected in e for e in errors), f"expected '{expected}' in {errors}")

    def test_the_check_accepts_what_docker_accepts(self):
        text = ("# syntax=docker/dockerfile:1\nARG TAG=1\nFROM x:${TAG} AS a\nRUN a \\\n  # note\n && b\n"
                "FROM y\nCOPY --from=a /a /b\nCOPY --from=0 /a /b\nCOPY CMakeLists.txt cmake/ /src/\n"
                "ENV A=1 \\\n    B=2\nCMD [\"a\", \"b\"]\n")
        self.assertEqual(dockerfile.check(text, ROOT), [])

    @unittest.skipIf(shutil.which("shellcheck") is None, "shellcheck is not installed")
    def test_run_steps_pass_shellcheck(self):
        runs = [i for i in dockerfile.parse(recipes.read(DOCKERFILE))
                if i.keyword == "RUN" and not i.args.startswith("[")]
        self.assertGreater(len(runs), 0)
        for ins in runs:
            with self.subTest(line=ins.line), tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
                f.write("#!/bin/sh\nset -e\n" + ins.args + "\n")
                f.flush()
                result = subprocess.run(["shellcheck", "-s", "sh", f.name], capture_output=True, text=True)
                self.assertEqual(result.returncode, 0, f"Dockerfile line {ins.line}:\n{result.stdout}")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
