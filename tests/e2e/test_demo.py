"""`make run`'s script, scripts/run_demo.sh, on a small slice of Fashion-MNIST: it prints which device
runs, one speedup/efficiency table (scale's, whose figures the report shares) and the phase table,
writes report.md with its PNG plots, and a second run into the same folder is refused without touching
the first one's results. On a machine with a GPU that scalebench cannot use, it says why before the CPU demo."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import temp_dir  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def run_demo(out_dir, **overrides):
    env = dict(os.environ, DEMO_DEVICE="cpu", DEMO_EPOCHS="1", DEMO_TRAIN_LIMIT="512", DEMO_TEST_LIMIT="256",
               MPIRUN=os.environ.get("MPIEXEC", "mpirun"), MPIRUN_FLAGS=os.environ.get("MPIEXEC_FLAGS", "--oversubscribe"))
    env.update(overrides)
    build_dir = os.path.dirname(os.environ["SCALEBENCH"])
    return subprocess.run([os.path.join(REPO, "scripts", "run_demo.sh"), build_dir, out_dir], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


@unittest.skipUnless(os.path.isdir(FASHION_MNIST), "Debian's dataset-fashion-mnist is not installed")
class Demo(unittest.TestCase):
    def test_prints_the_tables_and_writes_the_report_once(self):
        with temp_dir() as tmp:
            out_dir = os.path.join(tmp, "demo")
            result = run_demo(out_dir)
            output = result.stdout + result.stderr
            self.assertEqual(result.returncode, 0, output)
            self.assertIn("device: cpu (--device cpu)", result.stdout)
            self.assertEqual(result.stdout.count("the study: images/s and epoch time are medians"), 1, result.stdout)
            self.assertRegex(result.stdout, r"\n\s*ranks\s+images/s\s+range\s+epoch s\s+speedup\s+efficiency",
                             "scale's table counts ranks on the CPU")
            self.assertEqual(result.stdout.count("| img/s"), 0, "one speedup/efficiency table: the report's is not printed")
            # One measured epoch: a 1-rank baseline of one steady epoch, reported as what it is.
            self.assertIn("* measurement problem: the 1-rank baseline has one steady epoch", result.stdout)
            phases = result.stdout.split("Where the time goes")[1]
            self.assertRegex(phases, r"\|\s*ranks\s*\|", "the phase table counts ranks on the CPU")
            self.assertNotIn("GPU", phases, "no GPUs in a CPU demo's tables")
            report = os.path.join(out_dir, "report.md")
            self.assertTrue(os.path.isfile(report), output)
            pngs = [name for name in os.listdir(out_dir) if name.endswith(".png")]
            self.assertTrue(pngs, f"no PNG in {os.listdir(out_dir)}")
            with open(report, encoding="utf-8") as handle:
                first = handle.read()
            self.assertRegex(first, r"\n\|\s+2 \|", "the study has a 2-rank row")

            again = run_demo(out_dir)
            self.assertEqual(again.returncode, 2, again.stdout + again.stderr)
            self.assertIn("exists from an earlier run", again.stderr)
            self.assertIn("DEMO_OUT=", again.stderr)
            with open(report, encoding="utf-8") as handle:
                self.assertEqual(handle.read(), first, "the earlier report is untouched")


class DemoInput(unittest.TestCase):
    def test_a_missing_data_folder_is_named_before_anything_is_written(self):
        with temp_dir() as tmp:
            out_dir = os.path.join(tmp, "demo")
            missing = os.path.join(tmp, "no-such-folder")
            result = run_demo(out_dir, DEMO_DATA=missing)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertIn(f"DEMO_DATA={missing} is not a folder", result.stderr)
            self.assertEqual(os.listdir(tmp), [], "nothing is written")

    def test_a_failed_demo_leaves_no_folder_that_blocks_the_next(self):
        with temp_dir() as tmp:
            out_dir = os.path.join(tmp, "demo")
            data = FASHION_MNIST if os.path.isdir(FASHION_MNIST) else tmp
            result = run_demo(out_dir, DEMO_DATA=data, MPIRUN="false")
            self.assertNotEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertEqual(os.listdir(tmp), [], "no folder is left behind")

    def test_a_gpu_machine_without_a_usable_cuda_backend_is_told_why_before_the_cpu_demo(self):
        exe = os.environ["SCALEBENCH"]
        if subprocess.run([exe, "info", "--device", "cuda"], capture_output=True).returncode == 0:
            self.skipTest("this machine's CUDA backend works")
        with temp_dir() as tmp:
            fake_bin = os.path.join(tmp, "bin")
            os.makedirs(fake_bin)
            with open(os.path.join(fake_bin, "nvidia-smi"), "w") as f:
                f.write("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n")
            os.chmod(os.path.join(fake_bin, "nvidia-smi"), 0o755)
            out_dir = os.path.join(tmp, "demo")
            # The launcher fails at once: what matters is what is said before it runs.
            result = run_demo(out_dir, DEMO_DEVICE="auto", MPIRUN="false", PATH=fake_bin + os.pathsep + os.environ["PATH"])
            self.assertIn("WARNING: this machine has 1 GPU(s), but", result.stderr)
            self.assertIn("the demo runs on the CPU instead", result.stderr)


if __name__ == "__main__":
    unittest.main()
