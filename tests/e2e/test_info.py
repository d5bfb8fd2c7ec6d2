"""`scalebench info`: the CUDA line names the hardware work queues the ranks' CUDA contexts get, 32 where the
environment sets none (CUDA_DEVICE_MAX_CONNECTIONS, docs/image_data.md), and the user's value where it sets
one; a build without the CUDA backend prints none."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench  # noqa: E402

VARIABLE = "CUDA_DEVICE_MAX_CONNECTIONS"


def info_with(value):
    """The CUDA line of `scalebench info` on 2 ranks, with the variable set to `value` (None: unset)."""
    saved = os.environ.pop(VARIABLE, None)
    try:
        if value is not None:
            os.environ[VARIABLE] = value
        result = run_scalebench(2, "info", timeout=120)
    finally:
        os.environ.pop(VARIABLE, None)
        if saved is not None:
            os.environ[VARIABLE] = saved
    if result.returncode != 0:
        raise AssertionError(f"scalebench info failed ({result.returncode}): {result.stderr}")
    lines = [line for line in result.stdout.splitlines() if line.strip().startswith("CUDA")]
    if len(lines) != 1:
        raise AssertionError(f"one CUDA line expected in:\n{result.stdout}")
    return lines[0]


class CudaWorkQueues(unittest.TestCase):
    def test_thirty_two_unless_the_environment_sets_them(self):
        line = info_with(None)
        if "backend not built" in line:
            self.assertNotIn("work queues", line)
            return
        self.assertIn("work queues 32 (CUDA_DEVICE_MAX_CONNECTIONS)", line)
        self.assertIn("work queues 4 (CUDA_DEVICE_MAX_CONNECTIONS)", info_with("4"))


if __name__ == "__main__":
    unittest.main()
