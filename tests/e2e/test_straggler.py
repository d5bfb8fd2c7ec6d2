"""The straggler named with its evidence (docs/scaling_diagnosis.md): two CPU ranks bound to one core each;
a busy process sharing rank 1's core makes rank 1 arrive last at the gradient all-reduce, and the run names
it, with compute as the cause, in its `straggler:` line and its /straggler table. Without the busy process
no rank is named. Open MPI's --bind-to core binds the ranks; rank 1's core is read from its own affinity once
the job prints its first line (after MPI_Init, during which some transports' libraries move the affinity for
a moment)."""
import os
import re
import signal
import subprocess
import sys
import time
import unittest
import uuid

import h5py

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import scalebench_command, temp_dir  # noqa: E402

DATA = "synthetic:1x28x28:10:1024:128"
ARGS = ["train", "--model", "mnist-cnn", "--data", DATA, "--epochs", "2", "--batch-size", "32"]
MARKER = "SCALEBENCH_STRAGGLER_TEST"
NO_STRAGGLER_ATTEMPTS = 3  # load from outside the test on one core is a real straggler for that run


def usable_cpus():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def bound_command(out):
    command = scalebench_command(2, *ARGS, "--out", out)
    return [command[0], "--bind-to", "core", *command[1:]]


def rank_pid(marker, rank):
    """The pid of the scalebench process of `rank` in the job whose environment holds `marker`, or None."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        except OSError:
            continue
        own_rank = env.get(b"OMPI_COMM_WORLD_RANK", env.get(b"PMI_RANK"))
        if env.get(MARKER.encode()) == marker.encode() and own_rank == str(rank).encode():
            return int(pid)
    return None


def cpus_of(pid):
    with open(f"/proc/{pid}/status") as f:
        listed = re.search(r"^Cpus_allowed_list:\s*(\S+)", f.read(), re.MULTILINE).group(1)
    cpus = set()
    for part in listed.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def busy_on(cpu):
    """A process that spins on `cpu` until killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}), start_new_session=True)


class Straggler(unittest.TestCase):
    def run_job(self, out, busy_rank=None):
        """Runs the job; with busy_rank, a busy process shares that rank's core. Returns (stdout, straggler rows)."""
        marker = uuid.uuid4().hex
        job = subprocess.Popen(bound_command(out), env={**os.environ, MARKER: marker}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        busy = None
        try:
            first = job.stdout.readline()  # the ranks are past MPI_Init
            if busy_rank is not None:
                busy = self.start_busy(job, marker, busy_rank)
            rest, _ = job.communicate(timeout=600)
            stdout = first + rest
        finally:
            if job.poll() is None:
                job.kill()
            if busy:
                os.killpg(busy.pid, signal.SIGKILL)
                busy.wait()
        self.assertEqual(job.returncode, 0, stdout)
        with h5py.File(out, "r") as f:
            return stdout, f["straggler"][:], f["arrivals"][:]

    def start_busy(self, job, marker, rank):
        pid = None
        while pid is None and job.poll() is None:
            pid = rank_pid(marker, rank)
            time.sleep(0.05)
        if pid is None:
            self.skipTest("the job ended before its rank could be found")
        cpus = cpus_of(pid)
        for _ in range(5):  # the same for half a second: the binding, not a moment of start-up
            time.sleep(0.1)
            if cpus_of(pid) != cpus:
                cpus = cpus_of(pid)
        if len(cpus) != 1:
            job.kill()
            self.skipTest(f"mpiexec did not bind rank {rank} to one core with --bind-to core (CPUs {sorted(cpus)})")
        return busy_on(cpus.pop())

    def test_a_busy_core_names_its_rank_and_an_even_job_none(self):
        if usable_cpus() < 2:
            self.skipTest("fewer than 2 usable cores: the ranks can't each have a core of their own")
        with temp_dir() as tmp:
            stdout, verdicts, arrivals = self.run_job(os.path.join(tmp, "busy.h5"), busy_rank=1)
            line = [l for l in stdout.splitlines() if l.startswith("straggler:")]
            self.assertEqual(len(line), 1, stdout)
            self.assertRegex(line[0], r"^straggler: rank 1 \(host .+\) arrived last in \d+% .*\(compute is the cause\)$")
            last = verdicts[-1]  # the last epoch: the busy process ran through all of it
            self.assertEqual((last[1], last[12]), (1, 1), verdicts)  # rank, cause (compute)
            self.assertGreater(arrivals[-1][1][4], arrivals[-1][0][4])  # rank 1's compute over rank 0's

            for attempt in range(NO_STRAGGLER_ATTEMPTS):
                stdout, verdicts, _ = self.run_job(os.path.join(tmp, f"even{attempt}.h5"))
                if verdicts[-1][1] == -1:
                    break
            self.assertIn("straggler: none stands out", stdout)
            self.assertEqual(verdicts[-1][1], -1, verdicts)


if __name__ == "__main__":
    unittest.main()
