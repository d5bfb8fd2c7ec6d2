"""`mpirun -np N scalebench comm --device cpu` sweeps MPI all-reduces, checks them, prints them as nccl-tests'
all_reduce_perf does, and writes a consistent /comm table and --csv/--json tables that nccl-tests' parsers read;
with --collectives it sweeps reduce-scatter, all-gather and broadcast as well, each with nccl-tests' byte counts
and bus-bandwidth factor, named in a last column."""
import csv
import json
import os
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

MNIST_CNN_PARAMETERS = 1_199_882
COLLECTIVES = ["all-reduce", "reduce-scatter", "all-gather", "broadcast"]  # by code
# nccl-tests' bus-bandwidth factors (doc/PERFORMANCE.md).
BUSBW_FACTOR = {"all-reduce": lambda n: 2.0 * (n - 1) / n, "reduce-scatter": lambda n: (n - 1) / n,
                "all-gather": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}
POWERS_OF_TWO = [1 << k for k in range(10, 21)]  # 1K .. 1M
# all_reduce_perf's columns: out of place, then in place.
NCCL_TESTS_COLUMNS = ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                      "time", "algbw", "busbw", "#wrong"]


def parse_nccl_tests_rows(lines):
    """Rows the way nccl-tests' users parse all_reduce_perf: skip comments, split, take fields by position."""
    rows = []
    for fields in lines:
        if not fields or fields[0].startswith("#"):
            continue
        rows.append({"size": int(fields[0]), "count": int(fields[1]), "type": fields[2], "redop": fields[3],
                     "root": int(fields[4]),
                     "oop": {"time": float(fields[5]), "algbw": float(fields[6]), "busbw": float(fields[7]),
                             "wrong": int(fields[8])},
                     "ip": {"time": float(fields[9]), "algbw": float(fields[10]), "busbw": float(fields[11]),
                            "wrong": int(fields[12])}})
    return rows


class CommSweep(unittest.TestCase):
    def run_sweep(self, tmp, np):
        out = os.path.join(tmp, f"comm-np{np}.h5")
        result = run_scalebench(np, "comm", "--device", "cpu", "--min-bytes", "1K", "--max-bytes", "1M",
                                "--comm-model", "mnist-cnn", "--out", out, "--csv", out + ".csv", "--json",
                                out + ".jsonl", timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return out, result.stdout

    def check_stdout(self, stdout):
        header = next(line for line in stdout.splitlines() if "redop" in line).lstrip("#").split()
        self.assertEqual(header[:13], NCCL_TESTS_COLUMNS)
        # The default dtypes are fp32,bf16; MPI has no bf16 sum, and the output says so.
        self.assertIn("bf16 skipped", stdout)
        self.assertIn("--device cuda", stdout)
        self.assertIn("mnist-cnn gradients", stdout)
        self.assertIn("# Out of bounds values : 0 OK", stdout)
        self.assertRegex(stdout, r"# Avg bus bandwidth    : \d")
        rows = parse_nccl_tests_rows(line.split() for line in stdout.splitlines())
        self.assertEqual([r["size"] for r in rows], POWERS_OF_TWO + [4 * MNIST_CNN_PARAMETERS])
        self.assertEqual({(r["type"], r["redop"], r["root"]) for r in rows}, {("float", "sum", -1)})
        self.assertTrue(all(r["oop"]["wrong"] == 0 and r["ip"]["wrong"] == 0 for r in rows), stdout)
        return rows

    def check_exported(self, path, printed, np):
        """--csv parses as all_reduce_perf's output and agrees with the printed table; --json holds the same rows."""
        with open(path + ".csv", newline="") as f:
            lines = list(csv.reader(f))
        self.assertEqual(lines[0][:13], NCCL_TESTS_COLUMNS)
        self.assertEqual(lines[0][13:], ["oop_time_max", "ip_time_max", "model", "collective"])
        rows = parse_nccl_tests_rows(lines[1:])
        self.assertEqual(len(rows), len(printed))
        factor = 2.0 * (np - 1) / np
        for row, shown, fields in zip(rows, printed, lines[1:]):
            self.assertEqual({k: row[k] for k in ("size", "count", "type", "redop", "root")},
                             {k: shown[k] for k in ("size", "count", "type", "redop", "root")})
            for form in ("oop", "ip"):
                self.assertAlmostEqual(row[form]["time"], shown[form]["time"], delta=0.006)  # printed to 2 decimals
                self.assertAlmostEqual(row[form]["algbw"], row["size"] / (row[form]["time"] * 1e-6) / 1e9,
                                       delta=1e-9 * row[form]["algbw"])
                self.assertAlmostEqual(row[form]["busbw"], row[form]["algbw"] * factor, delta=1e-9 * row[form]["algbw"])
            # The slowest rank is never faster than the mean over ranks.
            self.assertGreaterEqual(float(fields[13]) * (1 + 1e-12), row["oop"]["time"])
            self.assertGreaterEqual(float(fields[14]) * (1 + 1e-12), row["ip"]["time"])
            self.assertEqual(fields[15], "mnist-cnn" if row["count"] == MNIST_CNN_PARAMETERS else "")
            self.assertEqual(fields[16], "all-reduce")
        with open(path + ".jsonl") as f:
            objects = [json.loads(line) for line in f]
        self.assertEqual([o["table"] for o in objects], ["comm"] * len(rows))
        self.assertEqual([o["size"] for o in objects], [r["size"] for r in rows])
        self.assertEqual([o["ip_busbw"] for o in objects], [r["ip"]["busbw"] for r in rows])

    def check_file(self, path, np):
        factor = 2.0 * (np - 1) / np
        with h5py.File(path, "r") as f:
            self.assertEqual(f.attrs["schema_version"], 3)
            self.assertEqual(f["comm"].attrs["comm_version"], 2)
            self.assertEqual(f.attrs["complete"], 1)
            self.assertNotEqual(f.attrs["end_time"], "")
            self.assertEqual(f.attrs["world_size"], np)
            self.assertEqual(len(f.attrs["hosts"]), np)
            self.assertEqual(list(f.attrs["gpu_models"]), ["cpu"] * np)
            # The linked NCCL's version in a CUDA build, "n/a" without the CUDA backend.
            self.assertRegex(f.attrs["nccl_version"], r"^(n/a|\d+\.\d+\.\d+)$")
            self.assertIn("comm", f.attrs["command_line"])
            config = json.loads(f.attrs["config_json"])
            self.assertEqual(config["command"], "comm")
            self.assertEqual(config["device"], "cpu")
            self.assertEqual((config["min_bytes"], config["max_bytes"]), (1024, 1 << 20))
            self.assertEqual(config["comm_model"], "mnist-cnn")
            self.assertEqual(config["model_elements"], MNIST_CNN_PARAMETERS)
            self.assertEqual(config["dtypes_run"], ["fp32"])
            self.assertEqual(config["collectives"], ["all-reduce"])
            self.assertNotIn("epochs", f)  # a comm file holds no training tables

            table = f["comm"]
            attrs = table.attrs
            self.assertEqual(attrs["backend"], "mpi")
            self.assertEqual(attrs["op"], "sum")
            self.assertEqual(attrs["ranks"], np)
            self.assertEqual(attrs["iterations"], config["iterations"])
            self.assertEqual(list(attrs["skipped_dtypes"]), ["bf16"])
            self.assertEqual(attrs["model"], "mnist-cnn")
            self.assertEqual(attrs["model_elements"], MNIST_CNN_PARAMETERS)
            names = list(attrs["dtype_names"])
            self.assertEqual(len(attrs["units"]), len(table.dtype.names))

            rows = table[:]
            self.assertEqual(list(rows["bytes"]), POWERS_OF_TWO + [4 * MNIST_CNN_PARAMETERS])
            self.assertEqual(list(rows["is_model_size"]), [0] * len(POWERS_OF_TWO) + [1])
            self.assertEqual(list(rows["collective"]), [0] * len(rows))  # all-reduce, the default
            self.assertEqual(list(attrs["collective_names"]), COLLECTIVES)
            self.assertEqual({names[code] for code in rows["dtype"]}, {"fp32"})
            self.assertEqual(list(rows["count"]), [b // 4 for b in rows["bytes"]])
            self.assertEqual(list(rows["wrong"]), [0] * len(rows))
            self.assertEqual(list(rows["oop_wrong"]), [0] * len(rows))
            for row in rows:
                for form in ("oop_", ""):  # out of place, in place
                    self.assertGreater(row[form + "time_us_min_rank"], 0.0)
                    self.assertLessEqual(row[form + "time_us_min_rank"], row[form + "time_us_mean"] * (1 + 1e-12))
                    self.assertLessEqual(row[form + "time_us_mean"], row[form + "time_us_max_rank"] * (1 + 1e-12))
                    # nccl-tests' default: algbw from the mean over ranks; busbw = algbw * 2(n-1)/n.
                    algbw = row[form + "algbw_gbps"]
                    self.assertAlmostEqual(algbw, row["bytes"] / (row[form + "time_us_mean"] * 1e-6) / 1e9, delta=1e-9 * algbw)
                    self.assertAlmostEqual(row[form + "busbw_gbps"], algbw * factor, delta=1e-9 * algbw)

    def test_sweep_on_2_and_4_ranks(self):
        with temp_dir() as tmp:
            for np in (2, 4):
                with self.subTest(np=np):
                    path, stdout = self.run_sweep(tmp, np)
                    printed = self.check_stdout(stdout)
                    self.check_file(path, np)
                    self.check_exported(path, printed, np)
                    # No working or staging copies are left beside the finished files.
                    self.assertEqual(sorted(os.listdir(tmp)),
                                     sorted(f"comm-np{k}.h5{ext}" for k in (2, 4) if k <= np for ext in ("", ".csv", ".jsonl")))

    def test_every_collective_on_3_ranks(self):
        """3 ranks split no power of two evenly: reduce-scatter and all-gather sizes round down to whole blocks."""
        np = 3
        with temp_dir() as tmp:
            out = os.path.join(tmp, "collectives.h5")
            result = run_scalebench(np, "comm", "--device", "cpu", "--collectives", ",".join(COLLECTIVES),
                                    "--min-bytes", "4", "--max-bytes", "64K", "--out", out, "--csv", out + ".csv",
                                    timeout=600)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertIn("# Out of bounds values : 0 OK", result.stdout)
            self.assertIn("reduce-scatter 0.667", result.stdout)  # the factors, in the opening lines
            self.assertIn("broadcast 1.000", result.stdout)
            header = next(line for line in result.stdout.splitlines() if "redop" in line).lstrip("#").split()
            self.assertEqual(header[:13], NCCL_TESTS_COLUMNS)
            self.assertEqual(header[-1], "collective")
            printed = [line.split() for line in result.stdout.splitlines() if line and not line.startswith("#")]
            self.assertEqual({fields[15] for fields in printed}, set(COLLECTIVES))
            with h5py.File(out, "r") as f:
                self.assertEqual(json.loads(f.attrs["config_json"])["collectives"], COLLECTIVES)
                names = list(f["comm"].attrs["collective_names"])
                rows = f["comm"][:]
            self.assertEqual(names, COLLECTIVES)
            for code, name in enumerate(COLLECTIVES):
                mine = rows[rows["collective"] == code]
                sweep = mine[mine["is_model_size"] == 0]
                self.assertGreater(len(sweep), 0, name)
                counts = [(1 << k) // 4 for k in range(2, 17)]
                if name in ("reduce-scatter", "all-gather"):
                    counts = [c // np * np for c in counts]
                self.assertEqual(list(sweep["count"]), [c for c in counts if c > 0], name)
                self.assertEqual(list(mine["bytes"]), [4 * c for c in mine["count"]])
                self.assertEqual(list(mine["wrong"]) + list(mine["oop_wrong"]), [0] * (2 * len(mine)))
                for row in mine:
                    for form in ("oop_", ""):
                        algbw = row[form + "algbw_gbps"]
                        self.assertAlmostEqual(algbw, row["bytes"] / (row[form + "time_us_mean"] * 1e-6) / 1e9,
                                               delta=1e-9 * algbw)
                        self.assertAlmostEqual(row[form + "busbw_gbps"], algbw * BUSBW_FACTOR[name](np),
                                               delta=1e-9 * algbw)
            with open(out + ".csv", newline="") as f:
                exported = list(csv.reader(f))
            self.assertEqual([fields[16] for fields in exported[1:]], [COLLECTIVES[c] for c in rows["collective"]])
            self.assertEqual({(fields[3], fields[4]) for fields in exported[1:] if fields[16] == "broadcast"},
                             {("none", "0")})

    def test_an_existing_table_file_is_never_replaced(self):
        with temp_dir() as tmp:
            kept = os.path.join(tmp, "kept.csv")
            with open(kept, "w") as f:
                f.write("earlier results\n")
            result = run_scalebench(2, "comm", "--device", "cpu", "--max-bytes", "4K", "--csv", kept, timeout=120)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertIn(f"--csv {kept}: the file exists already", result.stderr)
            with open(kept) as f:
                self.assertEqual(f.read(), "earlier results\n")

    def test_bad_input_is_refused_before_any_file(self):
        cases = [
            (["--dtypes", "bf16,fp16"], "--device cuda"),
            (["--dtypes", "fp8"], "--dtypes"),
            (["--collectives", "all-reduce,allgather"], "--collectives"),
            (["--min-bytes", "4K", "--max-bytes", "1K"], "--max-bytes"),
            (["--iterations", "0"], "--iterations"),
            (["--comm-model", "alexnet"], "alexnet"),
        ]
        with temp_dir() as tmp:
            out = os.path.join(tmp, "never.h5")
            for extra, needle in cases:
                with self.subTest(args=extra):
                    result = run_scalebench(2, "comm", "--device", "cpu", *extra, "--out", out, timeout=120)
                    self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                    self.assertIn(needle, result.stderr)
                    self.assertEqual(result.stderr.count("scalebench: error:"), 1, result.stderr)
                    self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
