"""report.py on files the real scalebench writes (ctest passes the binary and the MPI launcher).

    test_real_run.py train|scale SCALEBENCH MPIEXEC [MPIEXEC_FLAGS...]

`train`: a 2-rank run of the mlp on synthetic data, then its epoch table and scaling row.
`scale`: a 1/2/4-GPU study in one 4-rank job, then its study table; exits 77 (ctest: skipped) while the
binary has no `scale` command.
"""
import math
import os
import subprocess
import sys
import unittest

import h5py

from report_test_util import TempDirTest, read_csv, run_report

import plots  # noqa: E402  (fixtures, through report_test_util, puts analysis/ on the path)
import tables  # noqa: E402

SKIPPED = 77
DATA = "synthetic:1x8x8:4:256:64"
COMMAND, SCALEBENCH, MPIEXEC = (sys.argv[1:4] + [None] * 3)[:3]
MPIEXEC_FLAGS = sys.argv[4:]


def launch(ranks, *args):
    command = [MPIEXEC, *MPIEXEC_FLAGS, "-np", str(ranks), SCALEBENCH, *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=500)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def table_rows(markdown, first_header):
    """The body rows of the first Markdown table whose header starts with `first_header`, as cell lists."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} "))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


class TrainRunTest(TempDirTest):
    def test_report_on_a_two_rank_run(self):
        h5 = self.path("run.h5")
        launch(2, "train", "--device", "cpu", "--model", "mlp", "--data", DATA, "--epochs", "2", "--out", h5)
        with h5py.File(h5, "r") as f:
            epochs = f["epochs"][()]
            self.assertEqual(int(f.attrs["world_size"]), 2)
            # The analysis's phase lists name the phases the writer stores, in its order.
            stored_phases = tuple(name.decode() if isinstance(name, bytes) else name for name in f["steps"].attrs["phases"])
        self.assertEqual(plots.PHASES, stored_phases)
        self.assertEqual(tuple(name for name, _ in tables.PHASE_TABLE), stored_phases)

        result = run_report(h5, "--table-only", cwd=self.tmp)
        self.assert_ok(result)
        rows = table_rows(result.stdout, "epoch")
        self.assertEqual([int(r[0]) for r in rows], [1, 2])
        for row, stored in zip(rows, epochs):
            self.assertEqual(row[1], f"{stored['wall_time_max_s']:.3f}")
            self.assertEqual(row[5], f"{stored['train_loss']:.4f}")
            self.assertEqual(row[7], f"{100 * stored['test_accuracy']:.2f}%")
            self.assertGreater(float(row[4].replace(",", "")), 0)

        self.assert_ok(run_report(h5, "--out", self.path("out")))
        scaling = read_csv(self.path("out", "scaling.csv"))
        self.assertEqual(len(scaling), 1)
        self.assertEqual(int(scaling[0]["gpus"]), 2)
        self.assertEqual(float(scaling[0]["speedup"]), 1.0)
        self.assertEqual(float(scaling[0]["efficiency"]), 1.0)
        # Epoch 1 is the warm-up: the steady throughput is epoch 2's.
        self.assertAlmostEqual(float(scaling[0]["images_per_s"]), float(epochs[1]["images_per_s"]), places=6)
        self.assertEqual(scaling[0]["energy_per_image_j"], "n/a")  # no power sensor on the CPU
        self.assertEqual(len(read_csv(self.path("out", "epochs.csv"))), 2)
        for name in ("report.md", "curves.png", "phases.png"):
            self.assertGreater(os.path.getsize(self.path("out", name)), 0, name)


class ScaleStudyTest(TempDirTest):
    GPUS = [1, 2, 4]

    def test_report_on_a_study(self):
        h5 = self.path("study.h5")
        launch(4, "scale", "--model", "mlp", "--data", DATA, "--device", "cpu", "--gpus", "1,2,4", "--epochs", "2",
               "--out", h5)
        self.assert_ok(run_report(h5, "--out", self.path("out")))
        rows = {int(r["gpus"]): r for r in read_csv(self.path("out", "scaling.csv"))}
        self.assertEqual(sorted(rows), self.GPUS)
        self.assertEqual(float(rows[1]["speedup"]), 1.0)
        for n, row in rows.items():
            efficiency = float(row["efficiency"])
            self.assertTrue(0 < efficiency <= 1.2, f"efficiency {efficiency} at {n} GPUs")
            self.assertAlmostEqual(efficiency, float(row["speedup"]) / n)
            self.assertTrue(math.isfinite(float(row["images_per_s"])))
        for name in ("speedup.png", "efficiency.png", "phases.png", "curves.png"):
            self.assertGreater(os.path.getsize(self.path("out", name)), 0, name)
        result = run_report(h5, "--table-only", cwd=self.tmp)
        self.assert_ok(result)
        self.assertEqual([int(r[0]) for r in table_rows(result.stdout, "ranks")], self.GPUS)


def has_scale_command():
    return subprocess.run([SCALEBENCH, "scale", "--help"], capture_output=True).returncode == 0


if __name__ == "__main__":
    if COMMAND not in ("train", "scale") or not MPIEXEC:
        sys.exit(__doc__)
    if COMMAND == "scale" and not has_scale_command():
        print(f"skipped: {SCALEBENCH} has no scale command yet")
        sys.exit(SKIPPED)
    case = TrainRunTest if COMMAND == "train" else ScaleStudyTest
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
