"""Inputs that are not scalebench results: exit code 2 and one sentence that names the file."""
import os
import unittest

import h5py

import fixtures
from fixtures import epoch
from report_test_util import TempDirTest, run_report


class InputErrorTest(TempDirTest):
    def assert_input_error(self, path, *fragments, extra=()):
        out = self.path("out")
        result = run_report(path, *extra, "--out", out)
        self.assertEqual(result.returncode, 2, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
        message = result.stderr.strip()
        self.assertEqual(len(message.splitlines()), 1, f"not one line: {message}")
        self.assertNotIn("Traceback", message)
        self.assertTrue(message.startswith("report.py: error: "), message)
        self.assertIn(path, message)
        self.assertTrue(message.endswith("."), message)
        for fragment in fragments:
            self.assertIn(fragment, message)
        self.assertFalse(os.path.exists(out), "nothing may be written for a bad input")

    def test_text_file(self):
        path = self.path("notes.h5")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("epoch,time\n1,2.0\n")
        self.assert_input_error(path, "not an HDF5 file")

    def test_empty_file(self):
        path = self.path("empty.h5")
        open(path, "wb").close()
        self.assert_input_error(path, "not an HDF5 file")

    def test_missing_file(self):
        self.assert_input_error(self.path("absent.h5"), "no such file")

    def test_hdf5_without_schema_version(self):
        path = self.path("other.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("epochs", data=[1, 2, 3])
            f.attrs["title"] = "someone else's file"
        self.assert_input_error(path, "not a scalebench result", "schema_version")

    def test_unknown_schema_version(self):
        path = fixtures.write_run(self.path("future.h5"), 1, [epoch(1, 1.0, 10.0)], schema_version=99)
        self.assert_input_error(path, "schema_version 99")

    def test_scalebench_file_without_tables(self):
        path = self.path("bare.h5")
        with h5py.File(path, "w") as f:
            f.attrs["schema_version"] = 1
        self.assert_input_error(path, "neither an epochs nor a study table")

    def test_missing_columns(self):
        path = self.path("old.h5")
        with h5py.File(path, "w") as f:
            f.attrs["schema_version"] = 1
            f.create_dataset("epochs", data=[(1, 2.0)], dtype=[("epoch", "<i8"), ("wall_time_max_s", "<f8")])
        self.assert_input_error(path, "lacks the columns")

    def test_one_bad_file_among_good_ones(self):
        good = fixtures.write_run(self.path("good.h5"), 1, [epoch(1, 1.0, 10.0)])
        bad = self.path("bad.h5")
        with open(bad, "wb") as handle:
            handle.write(b"\x00" * 4096)
        result = run_report(good, bad, "--out", self.path("out"))
        self.assertEqual(result.returncode, 2)
        self.assertIn(bad, result.stderr)
        self.assertNotIn(good, result.stderr)
        self.assertFalse(os.path.exists(self.path("out")))

    def test_table_only_fails_the_same_way(self):
        path = self.path("notes.txt")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("hello\n")
        result = run_report(path, "--table-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn(path, result.stderr)
        self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main()
