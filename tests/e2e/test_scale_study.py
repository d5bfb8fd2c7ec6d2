"""`mpirun -np 4 scalebench scale --device cpu` on synthetic data writes a study whose table is
consistent; sweeps and repeats give one configuration each, and a swept value the CPU cannot run is
refused before any run. A study's images/s, speedup and efficiency are the same numbers in scale's
table, the study file and analysis/report.py's report, whatever its --settle-epochs."""
import csv
import json
import math
import os
import re
import subprocess
import sys
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402


class ScaleStudy(unittest.TestCase):
    def run_study(self, tmp, mode, batch):
        out = os.path.join(tmp, f"study-{mode}.h5")
        result = run_scalebench(4, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x16x16:10:2048:256",
                                "--epochs", "2", "--settle-epochs", "1", "--scaling", mode, "--batch-size", str(batch),
                                "--out", out, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return out, result.stdout

    def check_study(self, path, mode):
        with h5py.File(path, "r") as f:
            self.assertEqual(f.attrs["complete"], 1)
            study = f["study"][:]
            self.assertEqual(f["study"].attrs["mode"], mode)
            self.assertEqual(list(study["gpus"]), [1, 2, 4])
            self.assertEqual(f["study"].attrs["settle_epochs"], 1)
            self.assertEqual(study["speedup"][0], 1.0)
            self.assertEqual(study["efficiency"][0], 1.0)
            for row in study:
                self.assertGreater(row["efficiency"], 0.0)
                self.assertLessEqual(row["efficiency"], 1.2)
                self.assertAlmostEqual(row["efficiency"], row["speedup"] / row["gpus"])
                self.assertGreaterEqual(row["exposed_comm_fraction"], 0.0)
                self.assertLessEqual(row["exposed_comm_fraction"], 1.0)
                self.assertTrue(math.isnan(row["time_to_accuracy_s"]))
                self.assertTrue(math.isnan(row["wall_to_accuracy_s"]))
                group = f[f"configs/gpus_{row['gpus']}"]
                epochs = group["epochs"][:]
                self.assertEqual(len(epochs), 3)  # one settle epoch plus two measured
                measured = epochs[1:]
                # The study's figures are the medians of the measured epochs only.
                self.assertAlmostEqual(row["epoch_time_s"], np.median(measured["wall_time_max_s"]), places=9)
                self.assertAlmostEqual(row["images_per_s"], np.median(measured["images_per_s"]), places=6)
                self.assertEqual(group["epoch_times_per_rank"].shape, (3, row["gpus"]))
                # Start-up per configuration: the first holds the study's own parts and the first step,
                # every one its engine's construction.
                first = row["gpus"] == study["gpus"][0]
                for attribute in ("startup_data_s", "startup_first_step_s", "startup_to_first_step_s"):
                    self.assertEqual(math.isfinite(group.attrs[attribute]), first, (row["gpus"], attribute))
                self.assertTrue(math.isfinite(group.attrs["startup_engine_other_s"]), row["gpus"])
            base = study[0]
            for row in study:  # a throughput ratio in both modes (the same images per epoch in strong scaling)
                self.assertAlmostEqual(row["speedup"], row["images_per_s"] / base["images_per_s"], places=9)

    def test_time_to_accuracy_and_its_wall_clock_twin(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "target.h5")
            result = run_scalebench(2, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:256:64",
                                    "--epochs", "1", "--settle-epochs", "0", "--batch-size", "16",
                                    "--target-accuracy", "0.01", "--out", out, timeout=600)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            with h5py.File(out, "r") as f:
                study = f["study"][:]
            self.assertEqual(list(study["gpus"]), [1, 2])
            for row in study:
                # Each configuration as if it had run alone: the study's shared start-up, then its own time
                # from its start, which holds its training and evaluation.
                self.assertGreater(row["time_to_accuracy_s"], 0)
                self.assertGreater(row["wall_to_accuracy_s"], row["time_to_accuracy_s"])

    def test_weak_and_strong_studies(self):
        with temp_dir() as tmp:
            weak, stdout = self.run_study(tmp, "weak", 32)
            self.assertIn("efficiency", stdout)
            self.check_study(weak, "weak")
            strong, _ = self.run_study(tmp, "strong", 64)
            self.check_study(strong, "strong")
            with h5py.File(strong, "r") as f:
                # Strong scaling splits the global batch: 64 on 1 rank, 16 per rank on 4.
                config = json.loads(f.attrs["config_json"])
                self.assertEqual(config["batch_size"], 64)
                self.assertEqual(config["scaling"], "strong")

    def sweep(self, tmp, ranks, *sweep_args):
        out = os.path.join(tmp, f"sweep-np{ranks}.h5")
        result = run_scalebench(ranks, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:256:64",
                                "--epochs", "2", "--settle-epochs", "1", "--sample-steps", "0", *sweep_args,
                                "--out", out, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return out

    def test_batch_size_sweep_on_one_and_two_ranks(self):
        with temp_dir() as tmp:
            for ranks in (1, 2):
                gpus = list(range(1, ranks + 1))
                out = self.sweep(tmp, ranks, "--sweep-batch-size", "32,64", "--sweep-precision", "fp32")
                with h5py.File(out, "r") as f:
                    self.assertEqual(f.attrs["schema_version"], 3)
                    self.assertEqual(f.attrs["complete"], 1)
                    study = f["study"][:]
                    attrs = f["study"].attrs
                    self.assertEqual(list(attrs["swept"]), ["batch_size", "precision"])
                    self.assertEqual(attrs["repeats"], 1)
                    # Batch size outermost, then the GPU counts: one row per configuration.
                    self.assertEqual(list(study["batch_size"]), [b for b in (32, 64) for _ in gpus])
                    self.assertEqual(list(study["gpus"]), gpus * 2)
                    self.assertEqual({attrs["precision_names"][p] for p in study["precision"]}, {"fp32"})
                    self.assertEqual(set(study["repeat"]), {1})
                    for row in study:
                        name = f"configs/gpus_{row['gpus']}_batch_size_{row['batch_size']}_precision_fp32"
                        self.assertEqual(json.loads(f[name].attrs["config_json"])["batch_size"], row["batch_size"])
                        self.assertEqual(len(f[name]["epochs"]), 3)
                        if row["gpus"] == 1:  # each batch size is its own baseline
                            self.assertEqual(row["speedup"], 1.0)
                        self.assertAlmostEqual(row["efficiency"], row["speedup"] / row["gpus"])
                    self.assertEqual(len(f["configs"]), 2 * ranks)

    def test_repeats_get_a_group_each(self):
        with temp_dir() as tmp:
            out = self.sweep(tmp, 2, "--gpus", "2", "--repeats", "2")
            with h5py.File(out, "r") as f:
                self.assertEqual(sorted(f["configs"]), ["gpus_2_repeat_1", "gpus_2_repeat_2"])
                self.assertEqual(list(f["study"]["repeat"]), [1, 2])
                self.assertEqual(list(f["study"].attrs["swept"]), [])

    def test_a_swept_value_the_cpu_cannot_run_is_refused_before_any_run(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            result = run_scalebench(2, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x8x8:4:64:16",
                                    "--sweep-precision", "fp32,fp16", "--out", out, timeout=120)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertIn("--sweep-precision fp16 cannot run in this study", result.stderr)
            self.assertIn("--device cuda", result.stderr)
            self.assertNotIn("== scale:", result.stdout)
            self.assertFalse(os.path.exists(out))

    def test_bad_sweep_lists_are_refused_naming_the_option(self):
        for args, message in ((["--sweep-batch-size", "64,64"], "--sweep-batch-size lists 64 twice"),
                              (["--sweep-precision", "fp8"], "--sweep-precision expects one of fp32, tf32, fp16, bf16"),
                              (["--repeats", "0"], "--repeats expects an integer from 1")):
            result = run_scalebench(1, "scale", "--device", "cpu", "--model", "mlp", *args, timeout=120)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertIn(message, result.stderr)
        result = run_scalebench(1, "train", "--sweep-batch-size", "64,128", timeout=120)
        self.assertIn("unknown option '--sweep-batch-size' for 'scalebench train'", result.stderr)

    def test_more_gpus_than_ranks_is_refused(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            result = run_scalebench(2, "scale", "--model", "mlp", "--data", "synthetic:1x8x8:4:64:16", "--gpus", "1,4",
                                    "--out", out, timeout=120)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("--gpus lists 4", result.stderr)
            self.assertFalse(os.path.exists(out))


REPORT = os.path.join(os.path.dirname(__file__), "..", "..", "analysis", "report.py")


def scale_table(stdout):
    """scale's study table: {count: (images/s, efficiency in %, efficiency text)} from its rows."""
    table = stdout[stdout.index("the study: "):]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = line.split()
        if len(cells) < 9 or not cells[0].isdigit():
            break
        rows[int(cells[0])] = (float(cells[1]), float(cells[5].rstrip("%*")), cells[5])
    return rows


class OneStudyOneEfficiency(unittest.TestCase):
    """A 2-rank study with 0, 1 and 2 settle epochs: the report's img/s and efficiency are scale's and
    the study file's."""

    def check(self, tmp, settle):
        out = os.path.join(tmp, f"settle-{settle}.h5")
        result = run_scalebench(2, "scale", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x28x28:10:512:128",
                                "--epochs", "3", "--settle-epochs", str(settle), "--gpus", "1,2", "--sample-steps", "0",
                                "--out", out, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        printed = scale_table(result.stdout)
        self.assertEqual(sorted(printed), [1, 2], result.stdout)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["study"].attrs["settle_epochs"], settle)
            study = {int(r["gpus"]): r for r in f["study"][:]}
            for gpus in (1, 2):
                self.assertEqual(len(f[f"configs/gpus_{gpus}/epochs"]), settle + 3)
        report_dir = os.path.join(tmp, f"report-{settle}")
        report = subprocess.run([sys.executable, REPORT, out, "--out", report_dir], capture_output=True, text=True,
                                timeout=600, env=dict(os.environ, MPLBACKEND="Agg"))
        self.assertEqual(report.returncode, 0, report.stdout + report.stderr)
        self.assertNotIn("settle epochs", report.stderr)  # the file records them
        with open(os.path.join(report_dir, "scaling.csv"), newline="", encoding="utf-8") as handle:
            reported = {int(r["gpus"]): r for r in csv.DictReader(handle)}
        with open(os.path.join(report_dir, "report.md"), encoding="utf-8") as handle:
            markdown = handle.read()
        for gpus in (1, 2):
            images, efficiency, text = printed[gpus]
            row = reported[gpus]
            # The study file and the report: the same doubles, up to the median's rounding.
            self.assertAlmostEqual(float(row["images_per_s"]), study[gpus]["images_per_s"], delta=1e-9 * images)
            self.assertAlmostEqual(float(row["efficiency"]), study[gpus]["efficiency"], places=12)
            self.assertAlmostEqual(float(row["speedup"]), study[gpus]["speedup"], places=12)
            # scale's table: the same numbers, as printed.
            self.assertAlmostEqual(images, study[gpus]["images_per_s"], delta=0.051)
            self.assertEqual(f"{100.0 * study[gpus]['efficiency']:.1f}", f"{efficiency:.1f}")
            report_row = next(line for line in markdown.splitlines() if re.match(rf"^\|\s+{gpus} \|", line))
            self.assertEqual([c.strip() for c in report_row.strip("|").split("|")][5], text)

    def test_scale_the_study_file_and_the_report_agree(self):
        with temp_dir() as tmp:
            for settle in (0, 1, 2):
                with self.subTest(settle_epochs=settle):
                    self.check(tmp, settle)

    def test_the_former_option_is_refused_naming_the_new_one(self):
        result = run_scalebench(1, "scale", "--model", "mlp", "--warmup-epochs", "0", timeout=120)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("--warmup-epochs is now called --settle-epochs", result.stderr)
        self.assertIn("give --settle-epochs instead", result.stderr)
        self.assertNotIn("== scale:", result.stdout)


if __name__ == "__main__":
    unittest.main()
