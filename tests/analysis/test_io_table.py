"""bench/io_table.py and bench/io_rows.py: the input pipelines' rows of both programs side by side."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, BENCH)
import io_rows  # noqa: E402

SCRIPT = os.path.join(BENCH, "io_table.py")
HEADER = "decode,workers,images_per_s,mb_per_s,busy_cores,images_per_s_per_worker\n"


def write(folder, name, text):
    with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
        f.write(text)


def table(folder):
    r = subprocess.run([sys.executable, SCRIPT, folder], capture_output=True, text=True)
    return r.returncode, r.stdout.splitlines(), r.stderr


class IoTable(unittest.TestCase):
    def test_medians_ranges_and_ratio_of_both_sides(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "sb-io-1.csv", HEADER + "cpu,1,900,80,1.0,900\ncpu,4,3600,320,4.1,900\ngpu,4,9000,800,1.5,2250\n")
            write(d, "sb-io-2.csv", HEADER + "cpu,1,1100,90,1.0,1100\ncpu,4,3400,300,4.0,850\ngpu,4,9000,800,1.7,2250\n")
            rows = [{"decode": "cpu", "workers": 1, "images_per_s": 500.0, "mb_per_s": 45.0, "busy_cores": 1.2,
                     "images_per_s_per_worker": 500.0, "batches": 40},
                    {"decode": "cpu", "workers": 4, "images_per_s": 1750.0, "mb_per_s": 150.0, "busy_cores": None,
                     "images_per_s_per_worker": 437.5, "batches": 40}]
            write(d, "pt-io-1.json", json.dumps({"mode": "io", "rows": rows}))
            io_rows.write_csv(os.path.join(d, "pt-io-2.csv"), [dict(r, images_per_s=r["images_per_s"] * 1.2) for r in rows])
            rc, out, err = table(d)
        self.assertEqual(rc, 0, err)
        self.assertIn("scalebench 2 run(s), PyTorch 2 run(s)", out[0])
        cells = {(line.split()[0], line.split()[1]): line for line in out[2:]}
        self.assertEqual(set(cells), {("cpu", "1"), ("cpu", "4"), ("gpu", "4")})
        # scalebench 900 and 1,100: median 1,000; PyTorch 500 and 600: median 550; ratio 1000 / 550.
        self.assertIn("1,000 (900-1,100)", cells["cpu", "1"])
        self.assertIn("550 (500-600)", cells["cpu", "1"])
        self.assertTrue(cells["cpu", "1"].endswith("1.82x"), cells["cpu", "1"])
        self.assertIn("3,500 (3,400-3,600)", cells["cpu", "4"])
        self.assertTrue(cells["cpu", "4"].endswith("1.82x"))
        # No PyTorch row for gpu: its cells and the ratio say so; identical runs print one figure.
        self.assertEqual(cells["gpu", "4"].split()[2:], ["9,000", "1.6", "-", "-", "n/a"])

    def test_a_json_beside_the_csv_of_the_same_run_counts_once(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "pt-io-1.csv", HEADER + "cpu,8,2000,,,250\n")
            write(d, "pt-io-1.json", json.dumps({"rows": [{"decode": "cpu", "workers": 8, "images_per_s": 9}]}))
            rc, out, err = table(d)
        self.assertEqual(rc, 0, err)
        self.assertIn("PyTorch 1 run(s)", out[0])
        self.assertEqual(out[2].split()[2:], ["-", "-", "2,000", "-", "n/a"])

    def test_an_empty_folder_and_a_bad_file_are_named(self):
        with tempfile.TemporaryDirectory() as d:
            rc, _, err = table(d)
            self.assertNotEqual(rc, 0)
            self.assertIn("no sb-io-*.csv or pt-io-* files", err)
            write(d, "sb-io-1.csv", HEADER + "cpu,four,100,,,\n")
            rc, _, err = table(d)
            self.assertNotEqual(rc, 0)
            self.assertIn("workers 'four' is not a number", err)
            write(d, "sb-io-1.csv", "decode,images_per_s\ncpu,100\n")
            rc, _, err = table(d)
            self.assertIn("a row lacks workers", err)


class IoRows(unittest.TestCase):
    def test_csv_round_trip_keeps_the_columns_of_scalebench_io(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "rows.csv")
            io_rows.write_csv(path, [{"decode": "gpu", "workers": 15, "images_per_s": 12000.5, "mb_per_s": 1100.0,
                                      "busy_cores": 3.5, "images_per_s_per_worker": 800.0, "batches": 45}])
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.readline(), HEADER)
            self.assertEqual(io_rows.read_rows(path), [{"decode": "gpu", "workers": 15, "images_per_s": 12000.5,
                                                        "mb_per_s": 1100.0, "busy_cores": 3.5,
                                                        "images_per_s_per_worker": 800.0}])

    def test_timed_batches_are_whole_rounds_of_the_workers(self):
        self.assertEqual(io_rows.warmup_and_timed_batches(1, 40), (2, 40))
        self.assertEqual(io_rows.warmup_and_timed_batches(0, 40), (2, 40))
        self.assertEqual(io_rows.warmup_and_timed_batches(4, 40), (4, 40))
        self.assertEqual(io_rows.warmup_and_timed_batches(15, 40), (15, 45))
        self.assertEqual(io_rows.warmup_and_timed_batches(8, 1), (8, 8))

    def test_busy_cores_count_child_processes(self):
        before = io_rows.process_tree_cpu_seconds()
        child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                                  "while time.process_time() - t < 0.5: pass\nimport sys; sys.stdin.read()"],
                                 stdin=subprocess.PIPE)
        try:
            with_child = before
            for _ in range(100):  # until the child has burnt its half second
                with_child = io_rows.process_tree_cpu_seconds()
                if with_child - before >= 0.45:
                    break
                time.sleep(0.05)
        finally:
            child.communicate(b"")
        self.assertGreaterEqual(with_child - before, 0.45)

    def test_the_console_table_has_a_line_per_row(self):
        text = io_rows.format_rows([{"decode": "cpu", "workers": 4, "images_per_s": 3500.0, "mb_per_s": None,
                                     "busy_cores": 4.02, "images_per_s_per_worker": 875.0}])
        header, line = text.splitlines()
        self.assertEqual(header.split(), ["decode", "workers", "img/s", "MB/s", "busy", "cores", "img/s/worker"])
        self.assertEqual(line.split(), ["cpu", "4", "3,500", "n/a", "4.02", "875"])


if __name__ == "__main__":
    unittest.main()
