"""`--log-seconds S` prints plain timed progress lines within each epoch, never more often than every S seconds,
alongside `--log-interval`'s step lines; 0 turns them off."""
import datetime
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench  # noqa: E402

BASE = ["train", "--device", "cpu", "--model", "mlp", "--data", "synthetic:1x28x28:10:2048:64", "--epochs", "2",
        "--batch-size", "16"]
LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z epoch (\d+)/2 step (\d+)/(\d+) \| ([\d,]+) img/s, "
                  r"([\d,]+) per rank \| loss (\d+\.\d{4}) \| ETA epoch (\d\d:\d\d:\d\d), run (\d\d:\d\d:\d\d)$")
EVERY = 0.01  # an epoch here lasts 0.1 s on a fast machine, seconds on a loaded one


class ProgressLine(unittest.TestCase):
    def test_timed_lines(self):
        result = run_scalebench(2, *BASE, "--log-seconds", str(EVERY), "--log-interval", "20", timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNotIn("\r", result.stdout)
        timed = [line for line in result.stdout.splitlines() if re.match(r"^\d{4}-", line)]
        epoch_seconds = [float(t) for t in re.findall(r"^epoch +\d+/2 +time +([\d.]+) s", result.stdout, re.M)]
        self.assertEqual(len(epoch_seconds), 2, result.stdout)
        # A line is due every EVERY seconds, printed after the step that passes it: an epoch of T seconds
        # gets at most T / EVERY lines, and at least one once it lasts a few intervals.
        self.assertLessEqual(len(timed), sum(t / EVERY for t in epoch_seconds) + 2, result.stdout)
        self.assertGreaterEqual(max(epoch_seconds), 3 * EVERY, "the workload is too short to test the lines")
        self.assertGreaterEqual(len(timed), 1, result.stdout)
        parsed = [LINE.match(line) for line in timed]
        self.assertTrue(all(parsed), timed)
        self.assertIn("  epoch 1 step 20/64 lr", result.stdout)  # --log-interval keeps its lines
        by_epoch = {}
        for m in parsed:
            at = datetime.datetime.fromisoformat(m.group(1))
            by_epoch.setdefault(m.group(2), []).append((at, int(m.group(3))))
            self.assertEqual(m.group(4), "64")  # 2048 samples / 2 ranks / 16 per step
            total, per_rank = (int(m.group(k).replace(",", "")) for k in (5, 6))
            self.assertLessEqual(abs(total - 2 * per_rank), 1)
        for epoch, points in by_epoch.items():
            for (t0, s0), (t1, s1) in zip(points, points[1:]):
                self.assertGreaterEqual((t1 - t0).total_seconds(), EVERY - 0.0015, f"epoch {epoch}: lines too close")
                self.assertGreater(s1, s0)

    def test_zero_turns_them_off(self):
        result = run_scalebench(1, *BASE, "--log-seconds", "0", "--train-limit", "256", timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertFalse([line for line in result.stdout.splitlines() if re.match(r"^\d{4}-", line)], result.stdout)


if __name__ == "__main__":
    unittest.main()
