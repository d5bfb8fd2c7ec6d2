"""report.py's comm section: `scalebench comm` sweeps of both /comm layouts, alone or beside runs and studies."""
import math
import os
import sys
import unittest

import h5py
import numpy as np

import fixtures
from report_test_util import TempDirTest, read_csv, run_report

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "analysis"))
import comm_report  # noqa: E402

V2_FIELDS = [("bytes", "<i8"), ("count", "<i8"), ("dtype", "<i8")] + [
    (f"{form}{name}", kind) for form in ("oop_", "") for name, kind in
    (("time_us_mean", "<f8"), ("time_us_min_rank", "<f8"), ("time_us_max_rank", "<f8"), ("algbw_gbps", "<f8"),
     ("busbw_gbps", "<f8"), ("wrong", "<i8"))] + [("is_model_size", "<i8")]


def write_comm_v2(path, busbw_scale=1.0):
    """A version-2 sweep on 2 ranks: fp32 and bf16 at 1K..8K, and the mlp gradient (4.8 MB fp32, 2.4 MB bf16)."""
    rows = []
    for code, width in ((0, 4), (2, 2)):
        for size, model in [(1024, 0), (2048, 0), (4096, 0), (8192, 0), (1_199_882 * width, 1)]:
            bw = busbw_scale * size / 1e4
            rows.append((size, size // width, code, *(1.0, 1.0, 1.2, bw, 0.9 * bw, 0), *(1.0, 1.0, 1.2, bw, bw, 0), model))
    with h5py.File(path, "w") as f:
        f.attrs["schema_version"] = 1
        f.attrs["config_json"] = '{"command":"comm"}'
        table = f.create_dataset("comm", data=np.array(rows, dtype=V2_FIELDS))
        table.attrs["comm_version"] = 2
        table.attrs["backend"] = "nccl"
        table.attrs["ranks"] = 2
        table.attrs["model"] = "mlp"
        table.attrs["dtype_names"] = ["fp32", "fp64", "bf16", "fp16"]
    return path


class CommReportTest(TempDirTest):
    def test_both_layouts_load(self):
        v1 = comm_report.load_sweep(fixtures.write_comm(self.path("old.h5")))
        self.assertEqual(v1.version, 1)
        self.assertEqual([s.dtype for s in v1.series], ["fp32"])
        self.assertTrue(math.isnan(v1.series[0].oop_busbw[0]))  # version 1 measured in place only
        v2 = comm_report.load_sweep(write_comm_v2(self.path("new.h5")))
        self.assertEqual((v2.version, v2.backend, v2.ranks, v2.model), (2, "nccl", 2, "mlp"))
        self.assertEqual([s.dtype for s in v2.series], ["fp32", "bf16"])
        fp32 = v2.series[0]
        self.assertEqual(list(fp32.sizes), [1024, 2048, 4096, 8192])  # the model point is kept apart
        self.assertEqual(fp32.model_bytes, 1_199_882 * 4)
        self.assertAlmostEqual(fp32.model_busbw, 1_199_882 * 4 / 1e4)
        self.assertAlmostEqual(fp32.oop_busbw[3], 0.9 * 8192 / 1e4)

    def test_collectives_are_series_of_their_own(self):
        """A `collective` column splits each dtype by collective; files without it are all-reduces."""
        path = self.path("collectives.h5")
        rows = []
        for collective in (0, 1, 3):  # all-reduce, reduce-scatter, broadcast
            for size in (1024, 2048):
                bw = (collective + 1) * size / 1e4
                rows.append((size, size // 4, 0, *(1.0, 1.0, 1.2, bw, bw, 0), *(1.0, 1.0, 1.2, bw, bw, 0), 0, collective))
        with h5py.File(path, "w") as f:
            f.attrs["schema_version"] = 3
            table = f.create_dataset("comm", data=np.array(rows, dtype=V2_FIELDS + [("collective", "<i8")]))
            table.attrs["comm_version"] = 2
            table.attrs["backend"] = "mpi"
            table.attrs["ranks"] = 2
            table.attrs["dtype_names"] = ["fp32", "fp64", "bf16", "fp16"]
            table.attrs["collective_names"] = ["all-reduce", "reduce-scatter", "all-gather", "broadcast"]
        sweep = comm_report.load_sweep(path)
        self.assertEqual([(s.collective, s.dtype) for s in sweep.series],
                         [("all-reduce", "fp32"), ("reduce-scatter", "fp32"), ("broadcast", "fp32")])
        self.assertEqual([s.label for s in sweep.series],
                         ["collectives fp32", "collectives reduce-scatter fp32", "collectives broadcast fp32"])
        self.assertAlmostEqual(sweep.series[2].busbw[1], 4 * 2048 / 1e4)
        self.assertIn("| collectives (reduce-scatter) | mpi | 2 | fp32 |", comm_report.comm_markdown([sweep]))
        self.assertIn(",reduce-scatter\n", comm_report.comm_csv([sweep]))
        old = comm_report.load_sweep(write_comm_v2(self.path("old.h5")))
        self.assertEqual({s.collective for s in old.series}, {"all-reduce"})

    def test_sweeps_compared_in_the_report(self):
        a, b = write_comm_v2(self.path("a.h5")), write_comm_v2(self.path("b.h5"), busbw_scale=2.0)
        result = run_report(a, b, "--out", self.path("out"))
        self.assert_ok(result)
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("## All-reduce bandwidth", text)
        self.assertIn("| a | nccl | 2 | fp32 | 0.82 | 8K | 479.95 (mlp) | 4.8 |", text)
        self.assertIn("| b | nccl | 2 | bf16 | 1.64 | 8K | 479.95 (mlp) | 2.4 |", text)
        rows = read_csv(self.path("out", "comm.csv"))
        self.assertEqual(len(rows), 2 * 2 * 5)
        self.assertEqual({r["sweep"] for r in rows}, {"a", "b"})
        self.assertEqual(sum(int(r["is_model_size"]) for r in rows), 4)
        for ext in ("png", "svg"):
            self.assertTrue(os.path.getsize(self.path("out", f"comm_busbw.{ext}")) > 0)

    def test_a_sweep_beside_a_study(self):
        study = self.path("study.h5")
        fixtures.amdahl_study(study)
        comm = fixtures.write_comm(self.path("comm.h5"))
        result = run_report(study, comm, "--out", self.path("out"))
        self.assert_ok(result)
        self.assertEqual({r["series"] for r in read_csv(self.path("out", "scaling.csv"))}, {"study"})
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("## All-reduce bandwidth", text)
        self.assertIn("| comm (v1: slowest rank) |", text)
        only = run_report(comm, "--table-only")
        self.assert_ok(only)
        self.assertIn("## All-reduce bandwidth", only.stdout)


if __name__ == "__main__":
    unittest.main()
