"""`scale` on 1, 2 and 4 CPU ranks writes /efficiency_split: one row per /study row, whose parts add up to
the row's loss of efficiency (1 - its /study efficiency), from the median rank's sampled steps, and prints
one closing line per count above the baseline with the same numbers. Under strong scaling the ideal step
is the baseline's divided by the ranks. Nothing here depends on how fast the machine is."""
import math
import os
import re
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

PARTS = ("exposed_comm", "skew", "input", "compute", "unexplained")
LINE = re.compile(r"^(\d+) ranks: loss (-?[\d.]+) = exposed comm (-?[\d.]+) \+ skew (-?[\d.]+) \(compute (-?[\d.]+), "
                  r"input (-?[\d.]+), optimizer (-?[\d.]+)\) \+ input (-?[\d.]+) \+ compute (-?[\d.]+) \+ "
                  r"unexplained (-?[\d.]+)$", re.M)


class EfficiencySplit(unittest.TestCase):
    def study(self, tmp, mode):
        out = os.path.join(tmp, f"{mode}.h5")
        result = run_scalebench(4, "scale", "--model", "mlp", "--data", "synthetic:1x16x16:10:2048:256", "--epochs", "1",
                                "--settle-epochs", "1", "--scaling", mode, "--batch-size", "64" if mode == "strong" else "32",
                                "--out", out, timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        with h5py.File(out, "r") as f:
            return f["study"][:], f["efficiency_split"][:], result.stdout

    def check_rows(self, study, split):
        self.assertEqual(list(split["gpus"]), list(study["gpus"]))
        self.assertEqual(list(split["gpus"]), [1, 2, 4])
        for row, parts in zip(study, split):
            self.assertAlmostEqual(parts["efficiency_loss"], 1 - row["efficiency"], places=12)
            self.assertAlmostEqual(sum(parts[p] for p in PARTS), parts["efficiency_loss"], places=12)
            self.assertAlmostEqual(parts["skew"], parts["skew_compute"] + parts["skew_input"] + parts["skew_optimizer"],
                                   places=12)
            self.assertAlmostEqual(parts["ideal_step_s"], row["efficiency"] * parts["step_s"], places=12)
            self.assertTrue(all(math.isfinite(parts[p]) for p in PARTS), parts)
            self.assertTrue(0 <= parts["median_rank"] < row["gpus"], parts)
            self.assertGreater(parts["steps"], 0)
            # The median rank waits for later ranks, never for itself: no negative wait.
            self.assertGreaterEqual(parts["skew"], -1e-12)
        baseline = split[0]
        self.assertEqual(baseline["efficiency_loss"], 0.0)
        self.assertEqual([baseline[p] for p in PARTS], [0.0] * len(PARTS))
        self.assertEqual(baseline["skew"], 0.0)  # one rank waits for nobody

    def check_lines(self, stdout, split):
        self.assertIn("the efficiency loss against the smallest count, split", stdout)
        lines = {int(m.group(1)): [float(v) for v in m.groups()[1:]] for m in LINE.finditer(stdout)}
        self.assertEqual(sorted(lines), [2, 4], stdout)
        for parts in split[1:]:
            printed = lines[int(parts["gpus"])]
            written = [parts[c] for c in ("efficiency_loss", "exposed_comm", "skew", "skew_compute", "skew_input",
                                          "skew_optimizer", "input", "compute", "unexplained")]
            for p, w in zip(printed, written):
                self.assertAlmostEqual(p, 100 * w, delta=0.051)

    def test_weak_and_strong(self):
        with temp_dir() as tmp:
            study, split, stdout = self.study(tmp, "weak")
            self.check_rows(study, split)
            self.check_lines(stdout, split)
            # Weak scaling: every count's ideal step is the baseline's.
            for parts in split:
                self.assertAlmostEqual(parts["ideal_step_s"], split[0]["step_s"], places=9)
            study, split, _ = self.study(tmp, "strong")
            self.check_rows(study, split)
            # Strong scaling: a rank's share of the global batch shrinks with the ranks, and so does its ideal step.
            for parts in split:
                self.assertAlmostEqual(parts["ideal_step_s"], split[0]["step_s"] / parts["gpus"], places=9)


if __name__ == "__main__":
    unittest.main()
