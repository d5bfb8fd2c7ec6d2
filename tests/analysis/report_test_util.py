"""Shared helpers of the analysis tests: running report.py and reading what it wrote."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

from fixtures import REPORT


def run_report(*args, cwd=None):
    """Runs report.py with this interpreter (Debian's python3 under ctest); returns CompletedProcess."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, REPORT, *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sb-analysis-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def assert_ok(self, result):
        self.assertEqual(result.returncode, 0, f"report.py failed:\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
