"""A fault on one rank ends the whole job with one sentence naming the rank, and no rank hangs: a trace
folder or a checkpoint that differs on one node, a rank out of memory or failing mid-training, a rank that
stops answering (the collective watchdog), stop signals as launchers send them, and the smaller promises
of the run's end (a diverged run, integer options, the recorded command line). Every run is bounded by a
timeout: a hang fails the test."""
import os
import shlex
import signal
import subprocess
import sys
import time
import unittest

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, scalebench_command, temp_dir  # noqa: E402
from test_faults import rank_pids, ranks_gone, wait_for_line  # noqa: E402

DATA = "synthetic:1x28x28:10:1024:256"
MLP = ["train", "--device", "cpu", "--model", "mlp", "--data", DATA, "--batch-size", "32"]
HANG_LIMIT = 120  # seconds: far above any of these runs, far below "forever"
EXIT_INTERRUPTED = 75


def mpiexec_prefix():
    return [os.environ.get("MPIEXEC", "mpirun"), *os.environ.get("MPIEXEC_FLAGS", "--oversubscribe").split()]


def run(command, env=None, timeout=HANG_LIMIT):
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("scalebench: error")]


class FaultOnOneRank(unittest.TestCase):
    def assert_one_sentence(self, result, *words):
        errors = error_lines(result.stderr)
        self.assertEqual(len(errors), 1, "expected one error sentence:\n" + result.stderr)
        for word in words:
            self.assertIn(word, errors[0])
        self.assertNotIn("terminate called", result.stderr)
        return errors[0]

    def trace_folder_unwritable_on(self, rank):
        with temp_dir() as tmp:
            os.makedirs(os.path.join(tmp, f"trace-rank{rank}.json"))  # this rank alone cannot create its file
            out = os.path.join(tmp, "run.h5")
            result = run_scalebench(2, *MLP, "--epochs", "1", "--trace", tmp, "--out", out, timeout=HANG_LIMIT)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            sentence = self.assert_one_sentence(result, f"trace-rank{rank}.json", "--trace")
            if rank != 0:
                self.assertIn(f"rank {rank}", sentence)
            self.assertFalse(os.path.exists(out), "the check comes before any file is written")

    def test_trace_folder_unwritable_on_rank_1(self):
        self.trace_folder_unwritable_on(1)

    def test_trace_folder_unwritable_on_rank_0(self):
        self.trace_folder_unwritable_on(0)

    def test_checkpoint_of_another_model_on_rank_1(self):
        with temp_dir() as tmp:
            node_a, node_b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            for folder, model in ((node_a, "mlp"), (node_b, "mnist-cnn")):
                os.makedirs(folder)
                made = run_scalebench(1, "train", "--model", model, "--data", DATA, "--batch-size", "32", "--epochs", "1",
                                      "--checkpoint-every", "1",
                                      "--checkpoint", os.path.join(folder, "ck.h5"), "--out", os.path.join(folder, "run.h5"))
                self.assertEqual(made.returncode, 0, made.stderr)
            # The same relative path names another file on each "node": rank 0 runs in a/, rank 1 in b/.
            args = [os.environ["SCALEBENCH"], *MLP, "--epochs", "2", "--checkpoint-every", "1", "--checkpoint", "ck.h5",
                    "--resume", "ck.h5", "--out", "run.h5"]
            command = [*mpiexec_prefix(), "-np", "1", "-wdir", node_a, *args, ":", "-np", "1", "-wdir", node_b, *args]
            result = run(command)
            self.assertNotEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertEqual(len(error_lines(result.stderr)), 1, result.stderr)
            self.assertIn("rank 1", error_lines(result.stderr)[0])

    def test_older_checkpoint_copy_on_rank_1(self):
        """The same run's checkpoint, one epoch older on rank 1's node: refused before any work."""
        with temp_dir() as tmp:
            node_a, node_b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            for folder, epochs in ((node_a, "2"), (node_b, "1")):
                os.makedirs(folder)
                made = run_scalebench(1, *MLP, "--epochs", epochs, "--checkpoint-every", "1",
                                      "--checkpoint", os.path.join(folder, "ck.h5"), "--out", os.path.join(folder, "run.h5"))
                self.assertEqual(made.returncode, 0, made.stderr)
            before = open(os.path.join(node_a, "run.h5"), "rb").read()
            args = [os.environ["SCALEBENCH"], *MLP, "--epochs", "3", "--checkpoint", "ck.h5", "--resume", "ck.h5",
                    "--out", "run.h5"]
            result = run([*mpiexec_prefix(), "-np", "1", "-wdir", node_a, *args, ":", "-np", "1", "-wdir", node_b, *args])
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertEqual(len(error_lines(result.stderr)), 1, result.stderr)
            self.assertIn("rank 1 reads another checkpoint than rank 0", error_lines(result.stderr)[0])
            self.assertEqual(open(os.path.join(node_a, "run.h5"), "rb").read(), before, "nothing is written")

    def test_out_of_memory_while_loading_on_rank_1(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "run.h5")
            env = dict(os.environ, SCALEBENCH_FAULT="1:load")
            result = run([*mpiexec_prefix(), "-x", "SCALEBENCH_FAULT", "-np", "2", os.environ["SCALEBENCH"],
                          *MLP, "--epochs", "1", "--out", out], env=env)
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assert_one_sentence(result, "rank 1", "out of host memory")
            self.assertFalse(os.path.exists(out))

    def test_exception_mid_training_on_rank_1(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "run.h5")
            env = dict(os.environ, SCALEBENCH_FAULT="1:step")
            started = time.time()
            result = run([*mpiexec_prefix(), "-x", "SCALEBENCH_FAULT", "-np", "2", os.environ["SCALEBENCH"],
                          *MLP, "--epochs", "2", "--out", out], env=env)
            self.assertLess(time.time() - started, 60, "rank 0 must not wait for rank 1")
            self.assertNotEqual(result.returncode, 0, result.stdout + result.stderr)
            sentence = self.assert_one_sentence(result, "rank 1", "second training step")
            self.assertTrue(sentence.startswith("scalebench: error on rank 1 ("), sentence)
            self.assertTrue(ranks_gone(out, 10), "no rank may outlive the job")

    def test_stopped_rank_is_named_by_the_watchdog(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "watched.h5")
            proc = subprocess.Popen(scalebench_command(2, "train", "--model", "mnist-cnn", "--data", DATA, "--batch-size", "16",
                                                       "--epochs", "3", "--log-interval", "4", "--collective-timeout", "5",
                                                       "--out", out),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                wait_for_line(proc, "  epoch 1 step 4/", HANG_LIMIT)
                victim = rank_pids(out)[-1]
                victim_rank = launcher_rank(victim)
                os.kill(victim, signal.SIGSTOP)
                stopped_at = time.time()
                _, err = proc.communicate(timeout=HANG_LIMIT)
            finally:
                for pid in rank_pids(out):
                    os.kill(pid, signal.SIGKILL)
                if proc.poll() is None:
                    proc.kill()
            self.assertLess(time.time() - stopped_at, 60, "the watchdog ends the job after its timeout")
            self.assertNotEqual(proc.returncode, 0)
            errors = error_lines(err)
            self.assertEqual(len(errors), 1, err)
            self.assertIn(f"rank {victim_rank} of 2, which did not arrive", errors[0])
            self.assertIn("epoch 1, step", errors[0])
            self.assertIn("--collective-timeout 5", errors[0])


class StopSignals(unittest.TestCase):
    def test_sigterm_at_once_after_start_stops_cleanly(self):
        """A signal while the job is still starting is honoured at the first step, with the usual exit."""
        with temp_dir() as tmp:
            out = os.path.join(tmp, "early.h5")
            proc = subprocess.Popen(scalebench_command(2, *MLP, "--epochs", "3", "--out", out),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            signalled = set()
            deadline = time.time() + HANG_LIMIT
            while len(signalled) < 2 and time.time() < deadline and proc.poll() is None:
                for pid in rank_pids(out):
                    if pid not in signalled and catches_sigterm(pid):
                        os.kill(pid, signal.SIGTERM)  # as early as the process can tell it apart from a kill
                        signalled.add(pid)
                time.sleep(0.001)
            text, err = proc.communicate(timeout=HANG_LIMIT)
            self.assertEqual(len(signalled), 2, "both ranks were signalled while starting")
            self.assertEqual(proc.returncode, EXIT_INTERRUPTED, text + err)
            self.assertIn("stopped by signal 15", text)


    def test_sigterm_to_mpirun_during_a_step_longer_than_the_grace(self):
        """mpirun forwards SIGTERM and kills the ranks about a second later (odls_base_sigkill_timeout):
        a step longer than that is abandoned and the last finished step's checkpoint is written at once."""
        with temp_dir() as tmp:
            out = os.path.join(tmp, "long.h5")
            # Steps of seconds, two a rank in each epoch: the resume crosses an epoch's end in three steps.
            args = ["train", "--model", "mnist-cnn", "--data", "synthetic:1x28x28:10:6400:256", "--batch-size", "1600",
                    "--epochs", "2", "--log-interval", "1", "--out", out]
            env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_odls")}  # the default grace
            proc = subprocess.Popen(scalebench_command(2, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env)
            wait_for_line(proc, "  epoch 1 step 1/", HANG_LIMIT)
            time.sleep(0.3)  # inside the second step, which takes seconds
            proc.send_signal(signal.SIGTERM)  # to mpirun itself, as scancel and a terminal's kill do
            text, err = proc.communicate(timeout=HANG_LIMIT)
            checkpoint = out + ".ckpt.h5"
            self.assertIn("stop signal: checkpoint " + checkpoint, text, text + err)
            with h5py.File(checkpoint, "r") as f:
                self.assertEqual(f.attrs["epoch"], 0)
                self.assertGreaterEqual(f.attrs["step_in_epoch"], 1)
            with h5py.File(out, "r") as f:
                self.assertEqual(f.attrs["complete"], 0)
            # The killed ranks are gone before the job is resubmitted.
            self.assertTrue(ranks_gone(out, 30), "no rank may outlive the job")
            resumed = run_scalebench(2, *args, "--resume", checkpoint, timeout=600)
            self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)
            with h5py.File(out, "r") as f:
                self.assertEqual(f.attrs["complete"], 1)
                self.assertEqual(list(f["epochs"]["epoch"]), [1, 2])


def launcher_rank(pid):
    """The MPI rank mpirun gave a process (OMPI_COMM_WORLD_RANK in its environment)."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        for entry in f.read().split(b"\0"):
            if entry.startswith(b"OMPI_COMM_WORLD_RANK="):
                return int(entry.split(b"=", 1)[1])
    raise AssertionError(f"process {pid} has no OMPI_COMM_WORLD_RANK")


def catches_sigterm(pid):
    """True once the process has installed its own SIGTERM handler (SigCgt in /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return (int(line.split()[1], 16) >> (signal.SIGTERM - 1)) & 1 == 1
    except OSError:
        pass
    return False


class EndOfRun(unittest.TestCase):
    def test_diverged_run_is_not_complete_and_says_what_it_scored(self):
        with temp_dir() as tmp:
            out = os.path.join(tmp, "nan.h5")
            result = run_scalebench(2, "train", "--model", "mlp", "--data", "synthetic:1x8x8:4:256:64", "--optimizer", "sgd",
                                    "--lr", "1e30", "--epochs", "3", "--out", out, timeout=HANG_LIMIT)
            self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
            self.assertNotIn("--precision fp32", result.stdout, "the run is already fp32")
            with h5py.File(out, "r") as f:
                self.assertEqual(f.attrs["complete"], 0)
                accuracy = float(f["epochs"]["test_accuracy"][0])
            self.assertIn("best test accuracy %.2f%%" % (100 * accuracy), result.stdout)

    def test_integer_options_are_range_checked(self):
        result = run_scalebench(2, *MLP, "--epochs", "4294967297", timeout=HANG_LIMIT)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        errors = error_lines(result.stderr)
        self.assertEqual(len(errors), 1, result.stderr)
        self.assertIn("--epochs", errors[0])
        self.assertIn("4294967297", errors[0])

    def test_command_line_can_be_pasted_back(self):
        with temp_dir() as tmp:
            folder = os.path.join(tmp, "with space's")
            os.makedirs(folder)
            out = os.path.join(folder, "run.h5")
            result = run_scalebench(1, *MLP, "--epochs", "1", "--out", out, timeout=HANG_LIMIT)
            self.assertEqual(result.returncode, 0, result.stderr)
            with h5py.File(out, "r") as f:
                words = shlex.split(f.attrs["command_line"])
            self.assertEqual(words[-2:], ["--out", out])
            self.assertEqual(words[1:5], ["train", "--device", "cpu", "--model"])


if __name__ == "__main__":
    unittest.main()
