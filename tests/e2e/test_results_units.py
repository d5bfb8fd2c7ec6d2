"""Every dataset of a results file says its unit: a `units` attribute on each table and array that `train`,
`scale` and `comm` write (docs/results_schema.md), the optional ones (`steps`, `step_numbers`) included."""
import os
import sys
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

DATA = "synthetic:1x8x8:4:256:64"


def datasets_without_units(path):
    """The names of the file's datasets (at any depth) that lack a `units` attribute, and how many it has."""
    missing, seen = [], []

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            seen.append(name)
            if "units" not in item.attrs:
                missing.append(name)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return missing, seen


class EveryDatasetHasUnits(unittest.TestCase):
    def test_train_scale_and_comm_files(self):
        with temp_dir() as tmp:
            runs = {
                "train.h5": ["train", "--model", "mlp", "--data", DATA, "--epochs", "2", "--sample-steps", "4"],
                "scale.h5": ["scale", "--model", "mlp", "--data", DATA, "--epochs", "1", "--gpus", "1,2",
                             "--sample-steps", "4"],
                "comm.h5": ["comm", "--max-bytes", "4K"],
            }
            for name, args in runs.items():
                out = os.path.join(tmp, name)
                result = run_scalebench(2, *args, "--out", out, timeout=300)
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
                missing, seen = datasets_without_units(out)
                self.assertEqual(missing, [], f"{name}: datasets without a units attribute")
                if name != "comm.h5":  # the sampled steps' arrays are among those checked
                    self.assertTrue(any(n.endswith("step_numbers") for n in seen), seen)
                    self.assertTrue(any(n.endswith("steps") for n in seen), seen)


if __name__ == "__main__":
    unittest.main()
