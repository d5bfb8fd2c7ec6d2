"""A resume continues the same results file: the earlier epochs stay, the resumed ones are appended with
their step numbers continuing, a finished run is left alone, and a resume that can't continue the run
(other options, other data, a results file that does not match the checkpoint) changes nothing."""
import math
import os
import shutil
import signal
import struct
import sys
import unittest
import zlib

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402
from test_faults import EXIT_INTERRUPTED, rank_pids, start, wait_for_line  # noqa: E402

DATA = "synthetic:1x28x28:10:1024:256"
BASE = ["train", "--model", "mnist-cnn", "--data", DATA, "--batch-size", "16", "--optimizer", "adadelta", "--lr", "1.0",
        "--epochs", "3"]
STEPS_PER_EPOCH = 1024 // 2 // 16  # 2 ranks
RANKS = 2


def read(path):
    with h5py.File(path, "r") as f:
        epochs = f["epochs"][:]
        numbers = f["step_numbers"][:] if "step_numbers" in f else np.zeros(0, dtype=np.int64)
        steps = f["steps"][:] if "steps" in f else None
        return dict(f.attrs), epochs, numbers, steps


def read_version(path):
    with h5py.File(path, "r") as f:
        return int(f.attrs["schema_version"])


def contents(folder):
    """Every file of a folder, by name, with its bytes."""
    files = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "rb") as f:
            files[name] = f.read()
    return files


def reseal_checkpoint(path):
    """Writes a checkpoint's seal again after an edit (src/train/checkpoint/checkpoint.cpp: magic, content length, and
    CRC-32 and Adler-32 of the content after the 512-byte header)."""
    with open(path, "r+b") as f:
        content = f.read()[512:]
        digest = (zlib.crc32(content) << 32) | zlib.adler32(content)
        f.seek(0)
        f.write(b"SBCKPT01" + struct.pack("<QQ", len(content), digest))


def interrupt(args, out, *wait_for):
    """Starts a run, waits for each line in turn, then sends SIGTERM to every rank (as Slurm does)."""
    proc = start(RANKS, args)
    for line in wait_for:
        wait_for_line(proc, line, 300)
    for pid in rank_pids(out):
        os.kill(pid, signal.SIGTERM)
    text, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_INTERRUPTED, text + err
    return text


class Resume(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = temp_dir()
        root = cls.tmp.name
        # The reference: three epochs uninterrupted, with a checkpoint after each (the last one: finished).
        cls.full = os.path.join(root, "full.h5")
        result = run_scalebench(RANKS, *BASE, "--out", cls.full, "--checkpoint-every", "1", timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        # The same run stopped in epoch 3, after epochs [1, 2]; kept as a pristine copy for each test.
        cls.killed = os.path.join(root, "killed", "run.h5")
        os.makedirs(os.path.dirname(cls.killed))
        interrupt(BASE + ["--out", cls.killed, "--log-interval", "5"], cls.killed, "epoch   2/3", "  epoch 3 step 5/")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def killed_copy(self, name):
        """A fresh copy of the killed run's folder (results file and checkpoint): its results path."""
        folder = os.path.join(self.tmp.name, name)
        shutil.copytree(os.path.dirname(self.killed), folder)
        return os.path.join(folder, "run.h5")

    def assert_refused_and_untouched(self, out, args, *needles):
        folder = os.path.dirname(out)
        before = contents(folder)
        result = run_scalebench(RANKS, *args, timeout=600)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        after = contents(folder)
        self.assertEqual(sorted(after), sorted(before), "no working file may be left behind")
        for name in before:
            self.assertEqual(after[name], before[name], name + " must stay byte-identical")
        return result.stderr

    def test_resume_after_two_epochs_appends_the_third(self):
        out = self.killed_copy("append")
        attrs, rows, _, _ = read(out)
        self.assertEqual(list(rows["epoch"]), [1, 2])
        self.assertEqual(attrs["complete"], 0)
        with h5py.File(out + ".ckpt.h5", "r") as f:
            resumed_at = int(f.attrs["step_in_epoch"])
            self.assertEqual(f.attrs["epoch"], 2)
            self.assertGreaterEqual(resumed_at, 5)

        result = run_scalebench(RANKS, *BASE, "--out", out, "--resume", out + ".ckpt.h5", timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(sorted(os.listdir(os.path.dirname(out))), ["run.h5", "run.h5.ckpt.h5"])
        attrs, rows, numbers, steps = read(out)
        _, reference, reference_numbers, _ = read(self.full)
        self.assertEqual(attrs["complete"], 1)
        self.assertEqual(list(rows["epoch"]), [1, 2, 3])
        # The same losses as the uninterrupted run (bit-exact on the CPU), the first two rows untouched.
        for column in ("train_loss", "test_loss", "test_accuracy", "learning_rate"):
            np.testing.assert_array_equal(rows[column], reference[column], column)
        # The third row is partial: it says how many steps came before the resume, and times the rest.
        self.assertEqual(list(rows["steps_resumed"]), [0, 0, resumed_at])
        self.assertTrue(np.all(rows["wall_time_max_s"] > 0))
        self.assertTrue(np.all(rows["images_per_s"] > 0))
        # Step numbers continue from the checkpoint's global step; no row of /steps is all zeros.
        expected = list(range(2 * STEPS_PER_EPOCH)) + list(range(2 * STEPS_PER_EPOCH + resumed_at, 3 * STEPS_PER_EPOCH))
        self.assertEqual(list(numbers), expected)
        self.assertEqual(list(reference_numbers), list(range(3 * STEPS_PER_EPOCH)))
        self.assertEqual(steps.shape, (RANKS, len(expected), 6))  # data ... backward_overlap, comm, optimizer
        self.assertTrue(np.all(steps.sum(axis=2) > 0), "every sampled step was timed")
        with h5py.File(out, "r") as f:
            self.assertEqual(len(f["epoch_times_per_rank"]), 3)
            self.assertIn("--resume", list(f.attrs["resume_command_lines"])[0])

    def test_resume_of_a_finished_run_changes_nothing(self):
        folder = os.path.join(self.tmp.name, "finished")
        os.makedirs(folder)
        out = os.path.join(folder, "full.h5")
        for suffix in ("", ".ckpt.h5"):
            shutil.copyfile(self.full + suffix, out + suffix)
        before = contents(folder)
        result = run_scalebench(RANKS, *BASE, "--out", out, "--checkpoint-every", "1", "--resume", out + ".ckpt.h5",
                                timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("the run is finished", result.stdout)
        self.assertEqual(contents(folder), before, "the results file and the checkpoint stay as they were, nothing is added")

    def test_failing_checks_leave_the_file_byte_identical(self):
        out = self.killed_copy("refused")
        ckpt = out + ".ckpt.h5"
        resume = BASE + ["--out", out, "--resume", ckpt]
        sgd = [a if a != "adadelta" else "sgd" for a in resume]
        self.assert_refused_and_untouched(out, sgd, "--optimizer", '"adadelta"', '"sgd"')
        mlp = [a if a != "mnist-cnn" else "mlp" for a in resume]
        self.assert_refused_and_untouched(out, mlp, "--model", '"mnist-cnn"', '"mlp"')
        self.assert_refused_and_untouched(out, resume + ["--trace", os.path.join(out, "no", "such", "dir")], "--trace")
        fewer = [a if a != "3" else "2" for a in resume]
        self.assert_refused_and_untouched(out, fewer, "--epochs 2", "3 epochs")

    def test_results_file_of_another_schema_version_is_refused(self):
        out = self.killed_copy("older")
        with h5py.File(out, "r+") as f:  # as an older scalebench would have written it
            f.attrs["schema_version"] = f.attrs["schema_version"] - 1
        version = read_version(out)
        self.assert_refused_and_untouched(out, BASE + ["--out", out, "--resume", out + ".ckpt.h5"],
                                          f"schema version {version}", "can't append", "another --out")

    def test_options_that_shape_the_run_must_match(self):
        out = self.killed_copy("mismatch")
        resume = BASE + ["--out", out, "--resume", out + ".ckpt.h5"]

        def changed(option, value):
            args = list(resume)
            if option in args:
                args[args.index(option) + 1] = value
            else:
                args += [option, value]
            return args

        self.assert_refused_and_untouched(out, changed("--data", "fashion-mnist") + ["--train-limit", "2000"],
                                          "--data", DATA, "fashion-mnist")
        self.assert_refused_and_untouched(out, changed("--lr", "0.5"), "--lr", "checkpoint", " 1,", "0.5")
        self.assert_refused_and_untouched(out, changed("--seed", "99"), "--seed", " 1,", "99")
        self.assert_refused_and_untouched(out, changed("--model", "mlp"), "--model", "mnist-cnn", "mlp")
        self.assert_refused_and_untouched(out, changed("--data", "synthetic:1x28x28:10:2048:256"), "--data",
                                          "1024", "2048")

    def test_results_file_missing_or_ahead_is_refused_with_both_counts(self):
        out = self.killed_copy("counts")
        ckpt = out + ".ckpt.h5"
        missing = os.path.join(os.path.dirname(out), "moved.h5")
        stderr = self.assert_refused_and_untouched(out, BASE + ["--out", missing, "--resume", ckpt], "moved.h5")
        self.assertRegex(stderr, r"0 epochs.*2 epochs")
        ahead = os.path.join(os.path.dirname(out), "ahead.h5")
        shutil.copyfile(self.full, ahead)  # the uninterrupted run's file: 3 epochs, the checkpoint has 2
        stderr = self.assert_refused_and_untouched(out, BASE + ["--out", ahead, "--resume", ckpt], "ahead.h5")
        self.assertRegex(stderr, r"3 epochs.*2 epochs")

    def test_checkpoint_after_an_epochs_last_step_gives_a_partial_row(self):
        # A signal that lands after an epoch's last step, before its row is written: the checkpoint says
        # "epoch 1, step 2 of 2" and the file holds no row yet. Made here from the epoch-boundary
        # checkpoint of the same point (same weights), as a signal there can't be timed from outside.
        args = ["train", "--model", "mnist-cnn", "--data", "synthetic:1x28x28:10:1024:64", "--batch-size", "256",
                "--optimizer", "adadelta", "--lr", "1.0", "--epochs", "2"]
        folder = os.path.join(self.tmp.name, "last-step")
        os.makedirs(folder)
        out = os.path.join(folder, "run.h5")
        stop = run_scalebench(RANKS, *args, "--epochs", "1", "--checkpoint-every", "1", "--out", out, timeout=600)
        self.assertEqual(stop.returncode, 0, stop.stdout + stop.stderr)
        with h5py.File(out + ".ckpt.h5", "r+") as f:
            self.assertEqual((f.attrs["epoch"], f.attrs["step_in_epoch"], f.attrs["global_step"]), (1, 0, 2))
            f.attrs["epoch"], f.attrs["step_in_epoch"] = 0, 2
            f["train_totals"][...] = [[2.25 * 512, 60, 512]] * RANKS  # each rank's epoch so far
        reseal_checkpoint(out + ".ckpt.h5")
        with h5py.File(out, "r+") as f:  # the file as the signal left it: no row of epoch 1 yet
            f["epochs"].resize((0,))
            f["epoch_times_per_rank"].resize((0, RANKS))
            f["steps"].resize((RANKS, 0, f["steps"].shape[2]))
            f["step_numbers"].resize((0,))
            f.attrs["complete"] = 0

        result = run_scalebench(RANKS, *args, "--out", out, "--resume", out + ".ckpt.h5", timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        attrs, rows, numbers, steps = read(out)
        self.assertEqual(attrs["complete"], 1)
        self.assertEqual(list(rows["epoch"]), [1, 2])
        self.assertEqual(list(rows["steps_resumed"]), [2, 0])
        last = rows[0]
        for column in ("wall_time_max_s", "wall_time_mean_s", "wall_time_min_s", "images_per_s", "data_s", "forward_s",
                       "exposed_comm_s"):
            self.assertTrue(math.isnan(last[column]), f"{column} is {last[column]}: nothing was timed, so NaN (never 0)")
        self.assertEqual(last["learning_rate"], 1.0)
        self.assertEqual(last["train_loss"], 2.25)
        self.assertTrue(np.isfinite(last["test_accuracy"]))
        self.assertTrue(rows[1]["wall_time_max_s"] > 0)
        self.assertEqual(list(numbers), [2, 3], "epoch 1 ran no step after the resume; epoch 2's steps are 2 and 3")
        self.assertTrue(np.all(steps.sum(axis=2) > 0))
        with h5py.File(out, "r") as f:
            self.assertTrue(np.all(np.isnan(f["epoch_times_per_rank"][0])))

if __name__ == "__main__":
    unittest.main()
