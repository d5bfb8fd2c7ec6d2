"""report.py on hand-made run and study files: the tables hold the expected numbers."""
import itertools
import json
import os
import unittest

import numpy as np

import fixtures
from fixtures import epoch
from report_test_util import TempDirTest, read_csv, run_report


def by_gpus(rows):
    return {int(row["gpus"]): row for row in rows}


class RunSeriesTest(TempDirTest):
    """Three run files of one workload at 1, 2 and 4 ranks form one weak-scaling series."""
    THROUGHPUT = {1: 1000.0, 2: 1900.0, 4: 3600.0}

    def setUp(self):
        super().setUp()
        self.files = []
        for n, ips in self.THROUGHPUT.items():
            # Epoch 1 is the warm-up (left out); epochs 2 and 3 take 1 s each with 100 J and 0.1 s exposed comm.
            epochs = [epoch(1, 2.0, ips / 4, 0.5, 100.0), epoch(2, 1.0, ips, 0.1, 100.0), epoch(3, 1.0, ips, 0.1, 100.0)]
            self.files.append(fixtures.write_run(self.path(f"mlp-np{n}.h5"), n, epochs))

    def test_scaling_csv_numbers(self):
        self.assert_ok(run_report(*self.files, "--out", self.path("out")))
        rows = by_gpus(read_csv(self.path("out", "scaling.csv")))
        self.assertEqual(sorted(rows), [1, 2, 4])
        for n, ips in self.THROUGHPUT.items():
            row = rows[n]
            self.assertAlmostEqual(float(row["images_per_s"]), ips)
            self.assertAlmostEqual(float(row["speedup"]), ips / 1000.0)
            self.assertAlmostEqual(float(row["efficiency"]), ips / 1000.0 / n)
            self.assertAlmostEqual(float(row["exposed_comm_fraction"]), 0.1)
            self.assertAlmostEqual(float(row["energy_per_image_j"]), 200.0 / (2 * ips))
            self.assertEqual(row["mode"], "weak")
        self.assertEqual(rows[1]["speedup"], "1.0")
        self.assertEqual(rows[1]["karp_flatt"], "n/a")
        self.assertAlmostEqual(float(rows[2]["karp_flatt"]), (1 / 1.9 - 1 / 2) / (1 - 1 / 2))
        self.assertAlmostEqual(float(rows[4]["karp_flatt"]), (1 / 3.6 - 1 / 4) / (1 - 1 / 4))

    def test_markdown_table(self):
        self.assert_ok(run_report(*self.files, "--out", self.path("out")))
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        header = next(line for line in text.splitlines() if line.startswith("| GPUs |"))
        cells = [cell.strip() for cell in header.strip("|").split("|")]
        self.assertEqual(cells[:8], ["GPUs", "img/s", "img/s min-max", "speedup", "speedup min-max", "efficiency",
                                     "exposed comm", "energy per image (J/img)"])
        row2 = next(line for line in text.splitlines() if line.replace(" ", "").startswith("|2|1,900|"))
        # One steady epoch per run: each range is its median.
        self.assertEqual([c.strip() for c in row2.strip("|").split("|")][:8],
                         ["2", "1,900", "1,900-1,900", "1.90", "1.90-1.90", "95.0%", "10.0%", "0.0526"])
        self.assertIn("Amdahl fit: serial fraction s = ", text)
        self.assertIn("## Epochs", text)

    def test_energy_not_measured_is_na(self):
        plain = [fixtures.write_run(self.path(f"cpu-np{n}.h5"), n, [epoch(1, 1.0, 100.0 * n), epoch(2, 1.0, 100.0 * n)],
                                    cfg=fixtures.config(model="cifar-cnn")) for n in (1, 2)]
        self.assert_ok(run_report(*plain, "--out", self.path("out")))
        rows = read_csv(self.path("out", "scaling.csv"))
        self.assertEqual([row["energy_per_image_j"] for row in rows], ["n/a", "n/a"])
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            row = next(line for line in handle if line.replace(" ", "").startswith("|2|200|"))
        self.assertEqual(row.strip("|\n").split("|")[7].strip(), "n/a")

    def test_gpu_clocks_time_weighted_over_steady_epochs(self):
        """The slowest rank's SM clock: weighted by the steady epochs' times, the warm-up epoch left out; a
        column of its own in the markdown table only where a run measured it, and n/a in files without it."""
        def clocked(row, mhz):
            return dict(row, sm_clock_min_mhz=mhz, sm_clock_max_mhz=mhz + 20.0, temperature_min_c=55.0,
                        temperature_max_c=62.0, power_limited_fraction=1.0, thermal_limited_fraction=0.0)
        files = []
        for n, (warm, first, second) in {1: (1900.0, 1700.0, 1700.0), 2: (1900.0, 1650.0, 1620.0)}.items():
            epochs = [clocked(epoch(1, 2.0, 250.0 * n), warm), clocked(epoch(2, 1.0, 1000.0 * n), first),
                      clocked(epoch(3, 3.0, 1000.0 * n), second)]
            files.append(fixtures.write_run(self.path(f"clocked-np{n}.h5"), n, epochs))
        self.assert_ok(run_report(*files, "--out", self.path("out")))
        rows = by_gpus(read_csv(self.path("out", "scaling.csv")))
        self.assertAlmostEqual(float(rows[1]["sm_clock_min_mhz"]), 1700.0)
        self.assertAlmostEqual(float(rows[2]["sm_clock_min_mhz"]), (1650.0 * 1.0 + 1620.0 * 3.0) / 4.0)
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        header = next(line for line in text.splitlines() if line.startswith("| GPUs |"))
        self.assertEqual(header.strip("|").split("|")[-1].strip(), "slowest SM clock (MHz)")
        row2 = next(line for line in text.splitlines() if line.replace(" ", "").startswith("|2|2,000|"))
        self.assertEqual(row2.strip("|").split("|")[-1].strip(), "1,628")
        epochs_csv = read_csv(self.path("out", "epochs.csv"))
        self.assertAlmostEqual(float(epochs_csv[-1]["sm_clock_max_mhz"]), 1640.0)
        self.assertAlmostEqual(float(epochs_csv[-1]["power_limited_fraction"]), 1.0)
        self.assertAlmostEqual(float(epochs_csv[-1]["temperature_max_c"]), 62.0)

        self.assert_ok(run_report(*self.files, "--out", self.path("plain")))
        self.assertEqual({row["sm_clock_min_mhz"] for row in read_csv(self.path("plain", "scaling.csv"))}, {"n/a"})
        with open(self.path("plain", "report.md"), encoding="utf-8") as handle:
            self.assertNotIn("slowest SM clock", handle.read())

    def test_epoch_csv(self):
        self.assert_ok(run_report(self.files[0], "--out", self.path("out")))
        rows = read_csv(self.path("out", "epochs.csv"))
        self.assertEqual([int(r["epoch"]) for r in rows], [1, 2, 3])
        self.assertAlmostEqual(float(rows[1]["images_per_s"]), 1000.0)
        self.assertEqual(rows[0]["peak_memory_bytes"], "n/a")  # -1 in the file: not measured

    def test_table_only_prints_epoch_table_and_writes_nothing(self):
        os.mkdir(self.path("cwd"))
        result = run_report(self.files[1], "--table-only", cwd=self.path("cwd"))
        self.assert_ok(result)
        self.assertEqual(os.listdir(self.path("cwd")), [])
        lines = result.stdout.splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("| epoch |"))
        cells = [c.strip() for c in lines[header].strip("|").split("|")]
        self.assertEqual(cells, ["epoch", "time max (s)", "time mean (s)", "time min (s)", "img/s", "train loss",
                                 "test loss", "test acc", "lr"])
        body = lines[header + 2:header + 5]
        self.assertEqual([int(line.strip("|").split("|")[0]) for line in body], [1, 2, 3])
        self.assertEqual(body[1].strip("|").split("|")[4].strip(), "1,900")
        self.assertEqual(body[2].strip("|").split("|")[7].strip(), "80.00%")

    def test_a_run_on_image_files_gets_its_input_pipeline_table(self):
        clocks = {"sm_clock_min_mhz": 1980.0, "sm_clock_max_mhz": 1980.0, "temperature_min_c": 50.0,
                  "temperature_max_c": 55.0, "power_limited_fraction": 0.0, "thermal_limited_fraction": 0.0}
        pipeline = {"input_read_s": 0.75, "input_decode_s": 8.25, "input_augment_s": 0.5, "input_copy_s": 0.25,
                    "input_bytes_per_s": 4.1e8, "input_images_per_worker_s": 1150.0, "images_skipped": 2,
                    "gpu_decode_cpu_fallbacks": 7}
        epochs = [dict(epoch(n, 2.0, 4700.0), backward_overlap_s=0.0, **clocks, **pipeline) for n in (1, 2)]
        files = fixtures.write_run(self.path("files.h5"), 1, epochs, schema_version=3)
        self.assert_ok(run_report(files, "--out", self.path("files")))
        with open(self.path("files", "report.md"), encoding="utf-8") as handle:
            report = handle.read()
        self.assertIn("Input pipeline", report)
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in report.splitlines() if "8.25" in line]
        cells = rows[-1]
        self.assertEqual(cells, ["2", "0.200", "0.75", "8.25", "0.50", "0.25", "410.0", "1,150", "2", "7"])
        self.assertAlmostEqual(float(read_csv(self.path("files", "epochs.csv"))[0]["input_decode_s"]), 8.25)
        self.assert_ok(run_report(self.files[0], "--out", self.path("memory")))
        with open(self.path("memory", "report.md"), encoding="utf-8") as handle:
            self.assertNotIn("Input pipeline", handle.read())

    def test_batch_sizes_make_a_throughput_plot(self):
        files = [fixtures.write_run(self.path(f"bs{b}.h5"), 1, [epoch(1, 1.0, 10.0 * b), epoch(2, 1.0, 10.0 * b)],
                                    cfg=fixtures.config(batch_size=b)) for b in (32, 64, 128)]
        self.assert_ok(run_report(*files, "--out", self.path("out")))
        self.assertTrue(os.path.getsize(self.path("out", "throughput_vs_batch.png")) > 0)
        self.assertTrue(os.path.getsize(self.path("out", "throughput_vs_batch.svg")) > 0)

    def test_incomplete_file_is_reported_with_a_warning(self):
        path = fixtures.write_run(self.path("killed.h5"), 2, [epoch(1, 1.0, 100.0)], complete=False)
        result = run_report(path, "--out", self.path("out"))
        self.assert_ok(result)
        self.assertIn("killed.h5 is incomplete", result.stderr)
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            self.assertIn("stopped early", handle.read())


class StudyTest(TempDirTest):
    """A strong-scaling study whose speedups follow Amdahl's law with s = 0.05."""

    def setUp(self):
        super().setUp()
        self.file = self.path("study.h5")
        self.speedups = fixtures.amdahl_study(self.file, serial_fraction=0.05)

    def test_study_table(self):
        self.assert_ok(run_report(self.file, "--out", self.path("out")))
        rows = by_gpus(read_csv(self.path("out", "scaling.csv")))
        self.assertEqual(sorted(rows), [1, 2, 4, 8])
        self.assertEqual(float(rows[1]["speedup"]), 1.0)
        for n, row in rows.items():
            self.assertEqual(row["mode"], "strong")
            self.assertAlmostEqual(float(row["speedup"]), self.speedups[n])
            self.assertAlmostEqual(float(row["efficiency"]), float(row["speedup"]) / n)
            self.assertAlmostEqual(float(row["energy_per_image_j"]), 0.01)  # steady epochs only
            self.assertAlmostEqual(float(row["exposed_comm_fraction"]), 0.02 * (n - 1))
            if n > 1:
                self.assertAlmostEqual(float(row["karp_flatt"]), 0.05)
        fits = read_csv(self.path("out", "fits.csv"))
        self.assertEqual(len(fits), 1)
        self.assertAlmostEqual(float(fits[0]["amdahl_serial_fraction"]), 0.05, places=8)

    def test_table_only_prints_the_study_table(self):
        result = run_report(self.file, "--table-only", cwd=self.tmp)
        self.assert_ok(result)
        self.assertEqual(os.listdir(self.tmp), ["study.h5"])
        # The scaling table is the first one (the phase table follows it).
        text = result.stdout.splitlines()
        first = next(i for i, line in enumerate(text) if line.startswith("|"))
        lines = [line for line in itertools.takewhile(lambda line: line.startswith("|"), text[first:])]
        self.assertTrue(lines[0].startswith("| GPUs |"))
        self.assertEqual([int(line.strip("|").split("|")[0]) for line in lines[2:]], [1, 2, 4, 8])
        self.assertEqual(lines[2].strip("|").split("|")[3].strip(), "1.00")

    def test_baseline_of_two_gpus(self):
        rows = [{"gpus": n, "images_per_s": 100.0 * n * (0.9 if n == 4 else 1.0), "epoch_time_s": 1.0,
                 "speedup": 0.9 * 2 if n == 4 else 1.0, "efficiency": 0.9 if n == 4 else 1.0,
                 "exposed_comm_fraction": 0.0, "time_to_accuracy_s": 12.5 * n, "wall_to_accuracy_s": 14.0 * n}
                for n in (2, 4)]
        path = fixtures.write_study(self.path("b2.h5"), "weak", rows, {2: [epoch(1, 1.0, 200.0)], 4: [epoch(1, 1.0, 360.0)]},
                                    baseline_gpus=2)
        self.assert_ok(run_report(path, "--out", self.path("out")))
        rows = by_gpus(read_csv(self.path("out", "scaling.csv")))
        self.assertEqual(rows[2]["baseline_gpus"], "2")
        # p = 4/2 = 2: e = (1/1.8 - 1/2) / (1 - 1/2)
        self.assertAlmostEqual(float(rows[4]["karp_flatt"]), (1 / 1.8 - 0.5) / 0.5)
        self.assertAlmostEqual(float(rows[4]["time_to_accuracy_s"]), 50.0)
        self.assertAlmostEqual(float(rows[4]["wall_to_accuracy_s"]), 56.0)
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            report = handle.read()
        self.assertIn("time to accuracy (s)", report)
        self.assertIn("from process start (s)", report)


class StudyConfigTest(TempDirTest):
    def test_configuration_config_overrides_the_root(self):
        # Strong scaling, global batch 256: each configuration records only its per-rank batch.
        rows = [{"gpus": n, "images_per_s": 100.0 * n, "epoch_time_s": 1.0 / n, "speedup": float(n), "efficiency": 1.0,
                 "exposed_comm_fraction": 0.0, "time_to_accuracy_s": fixtures.NAN} for n in (1, 2)]
        path = fixtures.write_study(self.path("s.h5"), "strong", rows,
                                    {1: [epoch(1, 1.0, 100.0)], 2: [epoch(1, 0.5, 200.0)]},
                                    cfg=fixtures.config(model="wrn", scaling="strong", batch_size=256),
                                    config_diff=lambda n: {"batch_size": 256 // n})
        from scalebench_results import load_result
        result = load_result(path)
        self.assertEqual(result.configs["gpus_2"].config["model"], "wrn")
        self.assertEqual(result.configs["gpus_2"].batch_size, 128)
        self.assertEqual(result.configs["gpus_1"].batch_size, 256)


class ComparisonTest(TempDirTest):
    def test_study_against_a_pytorch_reference(self):
        study = self.path("scalebench.h5")
        fixtures.amdahl_study(study, serial_fraction=0.05)
        reference = self.path("pytorch.json")
        with open(reference, "w", encoding="utf-8") as handle:
            json.dump({"label": "PyTorch DDP", "scaling": "strong", "batch_size": 256,
                       "results": [{"gpus": 1, "images_per_s": 800.0}, {"gpus": 2, "images_per_s": 1400.0},
                                   {"gpus": 4, "images_per_s": 2400.0}]}, handle)
        self.assert_ok(run_report(study, "--reference", reference, "--out", self.path("out")))
        rows = [r for r in read_csv(self.path("out", "scaling.csv")) if r["series"] == "PyTorch DDP"]
        self.assertEqual([float(r["speedup"]) for r in rows], [1.0, 1.75, 3.0])
        self.assertEqual(rows[0]["kind"], "reference")
        wide = read_csv(self.path("out", "comparison.csv"))
        self.assertEqual([int(r["gpus"]) for r in wide], [1, 2, 4, 8])
        self.assertEqual(wide[3]["PyTorch DDP: images_per_s"], "n/a")  # no 8-GPU reference point
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("## Comparison", text)
        self.assertIn("PyTorch DDP / scalebench img/s", text)
        self.assertEqual(len(read_csv(self.path("out", "fits.csv"))), 2)

    def test_csv_reference_and_two_clusters(self):
        a, b = self.path("cluster-a.h5"), self.path("cluster-b.h5")
        fixtures.amdahl_study(a, serial_fraction=0.02)
        fixtures.amdahl_study(b, serial_fraction=0.10)
        reference = self.path("ref.csv")
        with open(reference, "w", encoding="utf-8") as handle:
            handle.write("gpus,images_per_s,batch_size\n1,900,64\n2,1700,64\n")
        self.assert_ok(run_report(a, b, "--reference", reference, "--out", self.path("out")))
        fits = {r["series"]: r["amdahl_serial_fraction"] for r in read_csv(self.path("out", "fits.csv"))}
        self.assertAlmostEqual(float(fits["cluster-a"]), 0.02, places=8)
        self.assertAlmostEqual(float(fits["cluster-b"]), 0.10, places=8)
        self.assertEqual(fits["ref"], "n/a")  # one point beyond its baseline: no fit through it

    def test_same_file_name_from_two_clusters(self):
        for cluster, s in (("a", 0.02), ("b", 0.1)):
            os.mkdir(self.path(cluster))
            fixtures.amdahl_study(self.path(cluster, "study.h5"), serial_fraction=s)
        self.assert_ok(run_report(self.path("a", "study.h5"), self.path("b", "study.h5"), "--out", self.path("out")))
        series = {r["series"] for r in read_csv(self.path("out", "scaling.csv"))}
        self.assertEqual(series, {f"study [{self.path('a', 'study.h5')}]", f"study [{self.path('b', 'study.h5')}]"})

    def test_bad_reference_is_an_input_error(self):
        reference = self.path("broken.json")
        with open(reference, "w", encoding="utf-8") as handle:
            json.dump({"label": "x", "results": [{"gpus": 1}]}, handle)
        result = run_report(fixtures.write_run(self.path("r.h5"), 1, [epoch(1, 1.0, 1.0)]), "--reference", reference)
        self.assertEqual(result.returncode, 2)
        self.assertIn(reference, result.stderr)
        self.assertIn("images_per_s", result.stderr)


class PhaseTableTest(TempDirTest):
    """The report's "where the time goes" table: seconds per steady epoch per phase and the uncovered rest."""

    def test_phase_seconds_shares_and_the_rest(self):
        files = []
        for n in (1, 2):
            rows = []
            for e in (1, 2, 3):  # epoch 1 is the warm-up; 2 and 3 take 1 s with forward 0.25 s of it
                row = epoch(e, 1.0 if e > 1 else 3.0, 1000.0 * n, 0.1)
                row["forward_s"] = 0.25 * row["wall_time_max_s"]
                rows.append(row)
            files.append(fixtures.write_run(self.path(f"mlp-np{n}.h5"), n, rows))
        self.assert_ok(run_report(*files, "--out", self.path("out")))
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        header = next(line for line in lines if line.startswith("| GPUs |") and "epoch - phases" in line)
        self.assertEqual([c.strip() for c in header.strip("|").split("|")],
                         ["GPUs", "data", "forward", "backward", "backward beside comm", "exposed comm", "optimizer",
                          "epoch - phases", "epoch (s)"])
        start = lines.index(header)
        row2 = next(line for line in lines[start:] if line.replace(" ", "").startswith("|2|"))
        # Schema 1 has no backward_overlap column: not measured, never 0.
        self.assertEqual([c.strip() for c in row2.strip("|").split("|")],
                         ["2", "0.100 (10.0%)", "0.250 (25.0%)", "0.400 (40.0%)", "n/a", "0.100 (10.0%)",
                          "0.100 (10.0%)", "0.050 (5.0%)", "1.000"])

    def test_older_schemas_read_backward_overlap_as_not_measured(self):
        from scalebench_results import load_result
        for version in (1, 2):
            path = fixtures.write_run(self.path(f"v{version}.h5"), 2, [epoch(1, 1.0, 100.0)], schema_version=version)
            epochs = load_result(path).run.epochs
            self.assertTrue(np.all(np.isnan(epochs["backward_overlap_s"])), version)
            self.assertEqual(float(epochs["backward_s"][0]), 0.4)
        path = fixtures.write_run(self.path("v3.h5"), 2, [dict(epoch(1, 1.0, 100.0), backward_overlap_s=0.25)],
                                  schema_version=3)
        self.assertEqual(float(load_result(path).run.epochs["backward_overlap_s"][0]), 0.25)

    def test_schema3_phase_table_shows_backward_beside_comm(self):
        files = []
        for n in (1, 2):
            rows = []
            for e in (1, 2, 3):  # backward 0.4 s of the 1 s epoch, of which 0.3 s beside an all-reduce at 2 GPUs
                row = fixtures.epoch(e, 1.0, 1000.0 * n, 0.1)
                row["backward_overlap_s"] = 0.3 if n == 2 else 0.0
                row["backward_s"] = 0.4 - row["backward_overlap_s"]
                rows.append(row)
            files.append(fixtures.write_run(self.path(f"mlp-v3-np{n}.h5"), n, rows, schema_version=3))
        self.assert_ok(run_report(*files, "--out", self.path("out3")))
        with open(self.path("out3", "report.md"), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        header = next(line for line in lines if line.startswith("| GPUs |") and "epoch - phases" in line)
        row2 = next(line for line in lines[lines.index(header):] if line.replace(" ", "").startswith("|2|"))
        cells = [c.strip() for c in row2.strip("|").split("|")]
        self.assertEqual(cells[3:5], ["0.100 (10.0%)", "0.300 (30.0%)"])

    def test_study_table_only_output_has_the_phase_table(self):
        study = self.path("study.h5")
        fixtures.amdahl_study(study)
        result = run_report(study, "--table-only")
        self.assert_ok(result)
        self.assertIn("Seconds per epoch by phase", result.stdout)
        self.assertIn("epoch - phases", result.stdout)


if __name__ == "__main__":
    unittest.main()
