"""What limits one run: `train` ends with a `step split:` line that gives the median rank's step in parts,
the accelerator utilisation (AU = compute + optimizer) and the limit in words, and writes the same parts
and limit as root attributes; `scale` prints and writes one per configuration. From JPEG files decoded by
one CPU worker the line names a limit, and where that is the input it gives the workers a 90% AU needs; on
synthetic data, whose batches are gathered in memory, mnist-cnn is limited by compute. What is asserted
holds whatever the machine's speed, but for the one limit a 1-rank mnist-cnn step leaves no doubt about."""
import math
import os
import re
import subprocess
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "make_image_data.py")
LINE = re.compile(r"^step split: ([\d.]+) ms a step on rank (\d+) over (\d+) sampled steps: compute (-?\d+)%, "
                  r"input wait (-?\d+)%, optimizer (-?\d+)%, communication (-?\d+)%, skew (-?\d+|n/a)%?, rest (-?\d+)%; "
                  r"AU ([\d.]+)%, limited by (input|compute|communication|waiting for rank \d+|waiting for other ranks|time outside .*?)(?:[:;] (.*))?$",
                  re.M)
ATTRIBUTES = ("step_split_step_s", "step_split_compute", "step_split_optimizer", "step_split_input", "step_split_comm",
              "step_split_skew", "step_split_rest", "step_split_accelerator_utilisation", "step_split_median_rank",
              "step_split_steps", "step_split_workers_for_bar", "step_split_limited_by", "step_split_late_rank")
# step_split_limited_by's code of each limit's first word in the line (docs/results_schema.md, "The step split").
LIMIT_CODES = {"compute": 1, "input": 2, "communication": 3, "waiting": 4, "time": 5}


class StepSplit(unittest.TestCase):
    def split_lines_of(self, count, np, *args):
        """Runs scalebench; its `step split:` lines, of which there must be `count`."""
        r = run_scalebench(np, *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = list(LINE.finditer(r.stdout))
        self.assertEqual(len(lines), count, r.stdout)
        return lines

    def check_attributes(self, attrs, line):
        for name in ATTRIBUTES:
            self.assertIn(name, attrs)
        self.assertAlmostEqual(attrs["step_split_accelerator_utilisation"],
                               attrs["step_split_compute"] + attrs["step_split_optimizer"], places=12)
        parts = [attrs[f"step_split_{p}"] for p in ("compute", "optimizer", "input", "comm", "skew", "rest")]
        self.assertAlmostEqual(sum(parts), 1.0, places=9)  # the rest is what the others leave
        self.assertAlmostEqual(1e3 * attrs["step_split_step_s"], float(line.group(1)), delta=0.051)
        self.assertAlmostEqual(100 * attrs["step_split_accelerator_utilisation"], float(line.group(10)), delta=0.051)
        self.assertEqual(attrs["step_split_steps"], int(line.group(3)))
        # The file stores the line's verdict.
        limit = line.group(11)
        self.assertEqual(attrs["step_split_limited_by"], LIMIT_CODES[limit.split()[0]], line.group(0))
        late = re.fullmatch(r"waiting for rank (\d+)", limit)
        if late:
            self.assertEqual(attrs["step_split_late_rank"], int(late.group(1)))

    def test_jpeg_files_decoded_by_one_worker(self):
        with temp_dir() as tmp:
            folder = os.path.join(tmp, "images")
            subprocess.run([sys.executable, SCRIPT, "imagenet-like", folder, "--classes", "2", "--train-per-class", "24",
                            "--val-per-class", "2", "--jobs", "1"], check=True, capture_output=True)
            out = os.path.join(tmp, "jpeg.h5")
            line = self.split_lines_of(1, 1, "train", "--model", "mlp", "--image-size", "32", "--val-resize", "36",
                                       "--batch-size", "8", "--epochs", "2", "--workers", "1", "--data", "imagefolder:" + folder,
                                       "--out", out)[0]
            limit, hint = line.group(11), line.group(12)
            with h5py.File(out, "r") as f:
                attrs = dict(f.attrs)
            self.check_attributes(attrs, line)
            # The second epoch's 6 steps (the first settles), every one sampled.
            self.assertEqual(int(line.group(3)), 6)
            workers = attrs["step_split_workers_for_bar"]
            if float(line.group(10)) < 90:  # below the bar the workers' hint is there, one way or the other
                self.assertIsNotNone(hint, line.group(0))
                m = re.match(r"90% AU needs [\d,]+ images/s a rank: (\d+) worker\(s\) \(this run: 1\) at the [\d,]+ images/s one "
                             r"built per busy second \(scalebench io --emulate-gpus measures the pipeline alone\)$", hint)
                if m:
                    self.assertEqual(int(m.group(1)), workers)
                    self.assertGreaterEqual(workers, 1)
                else:
                    self.assertRegex(hint, r"^no worker count reaches 90% AU: without any input wait the other parts hold it "
                                           r"at \d+%$")
                    self.assertTrue(math.isnan(workers))
            else:
                self.assertEqual(limit, "compute")
                self.assertTrue(math.isnan(workers))

    def test_synthetic_data_is_limited_by_compute(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "synthetic.h5")
            line = self.split_lines_of(1, 1, "train", "--model", "mnist-cnn", "--data", "synthetic:1x28x28:10:512:64",
                                       "--epochs", "2", "--out", out)[0]
            self.assertEqual(line.group(11), "compute", line.group(0))
            self.assertIsNone(line.group(12))  # data in memory: no workers to count
            with h5py.File(out, "r") as f:
                self.check_attributes(dict(f.attrs), line)

    def test_scale_splits_each_configuration(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "scale.h5")
            lines = self.split_lines_of(2, 2, "scale", "--model", "mlp", "--data", "synthetic:1x16x16:10:512:64",
                                        "--epochs", "1", "--out", out)
            with h5py.File(out, "r") as f:
                for name, line in zip(("gpus_1", "gpus_2"), lines):
                    self.check_attributes(dict(f["configs"][name].attrs), line)
            self.assertEqual(lines[0].group(8), "0")  # one rank waits for nobody


if __name__ == "__main__":
    unittest.main()
