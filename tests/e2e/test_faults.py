"""Never lose a run: a stop signal writes a checkpoint that resumes bit-exactly, a killed rank
ends the job quickly with a valid results file, and a diverging loss stops with a clear message."""
import os
import signal
import subprocess
import sys
import time
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, scalebench_command, temp_dir  # noqa: E402

DATA = "synthetic:1x28x28:10:1024:256"
BASE = ["train", "--model", "mnist-cnn", "--data", DATA, "--batch-size", "16", "--optimizer", "adadelta", "--lr", "1.0"]
EXIT_INTERRUPTED = 75


def rank_pids(tag, command="train"):
    """PIDs of the scalebench ranks whose command line contains `tag` (not mpirun itself)."""
    out = subprocess.run(["pgrep", "-f", f"scalebench {command}.*{tag}"], capture_output=True, text=True).stdout.split()
    pids = []
    for pid in out:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode()
        except OSError:
            continue
        if argv0.endswith("scalebench"):
            pids.append(int(pid))
    return pids


def ranks_gone(tag, seconds):
    """True once no rank of the run is left, waiting at most `seconds`: mpirun can return while the kernel
    still tears down a rank it killed (a loaded machine takes a moment to unmap its memory)."""
    deadline = time.time() + seconds
    while rank_pids(tag) and time.time() < deadline:
        time.sleep(0.1)
    return not rank_pids(tag)


def start(np_, args):
    return subprocess.Popen(scalebench_command(np_, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_line(proc, prefix, timeout):
    """Reads stdout until a line starting with prefix; returns the lines read."""
    lines, deadline = [], time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(prefix):
            return lines
    raise AssertionError("never saw %r:\n%s" % (prefix, "".join(lines)))


def epochs(path):
    with h5py.File(path, "r") as f:
        return f["epochs"][:]


class Faults(unittest.TestCase):
    def interrupted_run_resumes_exactly(self, np_):
        with temp_dir() as tmp:
            full = os.path.join(tmp, "full.h5")
            result = run_scalebench(np_, *BASE, "--epochs", "2", "--out", full)
            self.assertEqual(result.returncode, 0, result.stderr)

            part = os.path.join(tmp, "part.h5")
            proc = start(np_, BASE + ["--epochs", "2", "--out", part, "--log-interval", "5"])
            wait_for_line(proc, "  epoch 1 step 10/", 300)
            for pid in rank_pids(part):  # as Slurm signals every task of the step
                os.kill(pid, signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, EXIT_INTERRUPTED, out + err)
            checkpoint = part + ".ckpt.h5"
            self.assertIn("--resume " + checkpoint, out)
            with h5py.File(checkpoint, "r") as f:
                self.assertEqual(f.attrs["schema"], "scalebench-checkpoint")
                self.assertEqual(f.attrs["epoch"], 0)
                self.assertGreaterEqual(f.attrs["step_in_epoch"], 10)
                self.assertEqual(f["buffers"].shape[0], np_)
            with h5py.File(part, "r") as f:  # the interrupted run's results stay readable, marked unfinished
                self.assertEqual(f.attrs["schema_version"], 3)
                self.assertEqual(f.attrs["complete"], 0)

            # The resume continues the interrupted run's own results file.
            result = run_scalebench(np_, *BASE, "--epochs", "2", "--out", part, "--resume", checkpoint)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            a, b = epochs(full), epochs(part)
            self.assertEqual(list(b["epoch"]), [1, 2])
            # Bit-exact on the CPU: the same losses as the uninterrupted run.
            np.testing.assert_array_equal(a["train_loss"], b["train_loss"])
            np.testing.assert_array_equal(a["test_loss"], b["test_loss"])
            np.testing.assert_array_equal(a["test_accuracy"], b["test_accuracy"])

            if np_ == 2:  # another rank count can't take over in the middle of an epoch
                refused = run_scalebench(1, *BASE, "--epochs", "2", "--out", os.path.join(tmp, "x.h5"), "--resume", checkpoint)
                self.assertEqual(refused.returncode, 2)
                self.assertIn("written by 2 ranks", refused.stderr)

    def test_sigterm_checkpoint_resumes_exactly_on_2_ranks(self):
        self.interrupted_run_resumes_exactly(2)

    def test_sigterm_checkpoint_resumes_exactly_on_4_ranks(self):
        self.interrupted_run_resumes_exactly(4)

    def test_sigterm_ends_a_study_keeping_its_finished_configurations(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "study.h5")
            args = ["scale", "--model", "mnist-cnn", "--data", DATA, "--batch-size", "16", "--optimizer", "adadelta",
                    "--lr", "1.0", "--gpus", "1,2", "--epochs", "2", "--settle-epochs", "1", "--out", out,
                    "--log-interval", "5"]
            proc = start(2, args)
            wait_for_line(proc, "== scale: 2 of 2", 300)
            wait_for_line(proc, "  epoch 1 step 5/", 120)  # inside the 2-GPU configuration
            for pid in rank_pids(out, "scale"):
                os.kill(pid, signal.SIGTERM)
            text, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, EXIT_INTERRUPTED, text + err)
            self.assertIn("stopped by signal 15 during the 2-GPU configuration", text)
            self.assertIn("--gpus 2", text)
            with h5py.File(out, "r") as f:
                self.assertEqual(f.attrs["complete"], 0)
                self.assertNotEqual(f.attrs["end_time"], "")
                self.assertEqual(list(f["study"]["gpus"]), [1])  # only the finished configuration
                self.assertEqual(len(f["configs/gpus_1/epochs"]), 3)
                self.assertIn("gpus_2", f["configs"])  # the interrupted one keeps what it finished
            self.assertEqual(sorted(os.listdir(tmp)), ["study.h5"], "no checkpoint and no working file")

    def test_killed_rank_ends_the_job_quickly_and_keeps_results(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "killed.h5")
            proc = start(2, BASE + ["--epochs", "20", "--out", out, "--log-interval", "4"])
            wait_for_line(proc, "epoch   1/20", 300)
            wait_for_line(proc, "  epoch 2 step 4/", 120)  # mid-epoch
            victim = rank_pids(out)[-1]
            killed_at = time.time()
            os.kill(victim, signal.SIGKILL)
            out_text, err = proc.communicate(timeout=60)
            self.assertLess(time.time() - killed_at, 30, "the surviving ranks must not hang")
            self.assertNotEqual(proc.returncode, 0)
            self.assertTrue(ranks_gone(out, 30), "no rank may outlive the job")
            rows = epochs(out)  # opens, and holds the finished epoch
            self.assertGreaterEqual(len(rows), 1)
            self.assertEqual(rows[0]["epoch"], 1)

    def test_diverging_loss_stops_with_the_epoch_named(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "nan.h5")
            result = run_scalebench(2, "train", "--model", "mlp", "--data", "synthetic:1x8x8:4:256:64", "--optimizer", "sgd",
                                    "--lr", "1e30", "--epochs", "3", "--out", out)
            self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
            self.assertIn("epoch 1", result.stdout)
            self.assertRegex(result.stdout, "NaN|infinite")
            self.assertEqual(len(epochs(out)), 1)  # the epoch that diverged is kept


if __name__ == "__main__":
    unittest.main()
