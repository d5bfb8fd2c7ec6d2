"""bench/telemetry_summary.py: each run's busy samples per GPU, their medians and the clock-event reasons."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "telemetry_summary.py")
HEADER = "time,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active\n"


def summarise(csv_text, runs_text):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "telemetry.csv"), "w", encoding="utf-8") as f:
            f.write(HEADER + csv_text)
        with open(os.path.join(d, "runs.txt"), "w", encoding="utf-8") as f:
            f.write(runs_text)
        out = subprocess.run([sys.executable, SCRIPT, d], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()[1:]]


class TelemetrySummary(unittest.TestCase):
    def test_medians_of_busy_samples_inside_each_run(self):
        rows = summarise(
            "10.0, 0, 1980, 3201, 500.0, 50, 100, 0x0\n"
            "10.5, 0, 1700, 3201, 700.0, 60, 100, 0x4\n"
            "11.0, 0, 1800, 3201, 600.0, 55, 100, 0x0\n"
            "11.2, 0, 345, 3201, 80.0, 40, 0, 0x1\n"      # idle: left out
            "12.0, 1, 1500, 3201, 690.0, 70, 90, 0x40\n"  # outside the first run
            "12.0, 0, 1000, 3201, 690.0, 70, 90, 0x0\n",
            "a 9.9 11.5\nb 11.9 12.1\n")
        self.assertEqual(rows[0], ["a", "0", "3", "1800", "3201", "600.0", "55", "sw-power-cap"])
        self.assertEqual(rows[1], ["b", "0", "1", "1000", "3201", "690.0", "70", "none"])
        self.assertEqual(rows[2], ["b", "1", "1", "1500", "3201", "690.0", "70", "hw-thermal"])
        self.assertEqual(len(rows), 3)

    def test_a_cut_off_sample_and_an_idle_run_are_skipped(self):
        rows = summarise("10.0, 0, 1980\n10.1, 0, 300, 3201, 70.0, 40, 0, 0x1\n", "idle 9 11\n")
        self.assertEqual(rows, [])

    def test_missing_files_are_named(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, SCRIPT, d], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no telemetry.csv", r.stderr)


if __name__ == "__main__":
    unittest.main()
