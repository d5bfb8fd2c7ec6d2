"""A 2-rank CPU run with --out and --trace: the results file lists the step phases (backward_overlap
included: zero on the CPU, whose all-reduce blocks after backward) on /steps and in the epoch columns,
records no bucket ready times (the CPU engine has no buckets), and each rank's trace lays the host-timed
phases end to end on named tracks inside the epoch."""
import json
import math
import os
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

PHASES = ["data", "forward", "backward", "backward_overlap", "comm", "optimizer"]
RUN = ["train", "--model", "mlp", "--data", "synthetic:1x28x28:10:512:128", "--batch-size", "32", "--epochs", "2",
       "--sample-steps", "4"]


class StepPhases(unittest.TestCase):
    def test_results_and_trace_of_a_cpu_run(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "run.h5")
            result = run_scalebench(2, *RUN, "--out", out, "--trace", tmp)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            with h5py.File(out, "r") as f:
                self.assertEqual(f.attrs["schema_version"], 3)
                steps = f["steps"]
                self.assertEqual([p.decode() if isinstance(p, bytes) else p for p in steps.attrs["phases"]], PHASES)
                self.assertEqual(steps.shape[0], 2)
                self.assertEqual(steps.shape[2], len(PHASES))
                self.assertTrue((steps[:, :, PHASES.index("backward_overlap")] == 0).all())
                self.assertTrue((steps[:, :, PHASES.index("backward")] > 0).all())
                epochs = f["epochs"][:]
                for row in epochs:
                    self.assertEqual(row["backward_overlap_s"], 0.0)
                    self.assertGreater(row["backward_s"], 0.0)
                self.assertNotIn("bucket_ready", f)
            for rank in (0, 1):
                with open(os.path.join(tmp, f"trace-rank{rank}.json"), encoding="utf-8") as handle:
                    trace = json.load(handle)
                events = trace["traceEvents"]
                tracks = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
                self.assertEqual(tracks[1], "step phases (compute stream)")
                spans = [e for e in events if e.get("ph") == "X" and e["cat"] == "step"]
                self.assertEqual(len(spans) % len(PHASES), 0)
                self.assertEqual([e["name"] for e in spans[:len(PHASES)]], PHASES)
                # Host-timed phases lie end to end: within a step each starts where the one before it
                # ended, and no step starts before the one before it ended.
                for before, after in zip(spans, spans[1:]):
                    self.assertGreaterEqual(after["ts"], before["ts"] + before["dur"] - 0.01)
                for first in range(0, len(spans), len(PHASES)):
                    step = spans[first:first + len(PHASES)]
                    for before, after in zip(step, step[1:]):
                        self.assertAlmostEqual(after["ts"], before["ts"] + before["dur"], delta=0.01)
                epoch = next(e for e in events if e.get("name") == "train epoch")
                self.assertGreaterEqual(spans[0]["ts"], epoch["ts"] - 0.01)
                self.assertFalse(any(e.get("cat") == "allreduce" for e in events))
                self.assertFalse(any(math.isnan(e["dur"]) for e in spans))


if __name__ == "__main__":
    unittest.main()
