"""The NVTX ranges of a short `scalebench train`, recorded by nvtx_range_recorder (NVTX_INJECTION64_PATH):
their names and nesting. On the CPU (every build with the nvtx3 headers): "untimed-init" around the untimed
evaluation and steps before the first epoch (--untimed-init), "epoch N" around each epoch, a
"step" per training step holding the phases of src/metrics/step_phases.h in order, and "evaluation". With
NVTX_DEVICE=cuda (the GPU node): the same on the CUDA engine on 2 ranks where 2 GPUs are visible, plus each
gradient bucket's all-reduce (one rank has nothing to all-reduce: then no bucket ranges at all)."""
import glob
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from e2e_util import scalebench_command, temp_dir  # noqa: E402

DOMAIN = "scalebench"
DEVICE = os.environ.get("NVTX_DEVICE", "cpu")
RECORDER = os.environ.get("NVTX_RECORDER", "")
SOURCE = os.path.join(os.path.dirname(__file__), "..", "..")
EPOCHS, TRAIN, BATCH = 2, 256, 32


def step_phases():
    """The phase list, from its one definition."""
    with open(os.path.join(SOURCE, "src", "metrics", "step_phases.h")) as f:
        text = f.read()
    names = re.search(r"kStepPhases\s*=\s*\{([^}]*)\}", text).group(1)
    return re.findall(r'"([^"]+)"', names)


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def read_tree(path):
    """The scalebench-domain ranges of one process as trees: [(name, [children])] per thread, in order."""
    roots, stacks = {}, {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(" ", 3)
            what, thread, domain = parts[0], parts[1], parts[2]
            if domain != DOMAIN:
                continue
            stack = stacks.setdefault(thread, [])
            if what == "push":
                node = (parts[3], [])
                (stack[-1][1] if stack else roots.setdefault(thread, [])).append(node)
                stack.append(node)
            else:
                assert stack, f"{path}:{number}: a pop without a push"
                stack.pop()
    for thread, stack in stacks.items():
        assert not stack, f"{path}: thread {thread} left ranges open: {[n for n, _ in stack]}"
    return roots


class NvtxRanges(unittest.TestCase):
    def setUp(self):
        if not RECORDER:
            self.skipTest("this build has no NVTX ranges: the nvtx3 headers (CUDA toolkit) were not found at configure time")
        # A build of some targets only (cmake --build --target ...) leaves the recorder out: say so, rather than
        # fail later on a missing record.
        self.assertTrue(os.path.isfile(RECORDER),
                        f"the NVTX recorder '{RECORDER}' is missing: build the target sb_nvtx_recorder (or all targets)")
        if DEVICE == "cuda" and gpu_count() == 0:
            self.skipTest("no GPU visible: the CUDA ranges are checked on a GPU node")

    def test_ranges_name_epochs_steps_phases_and_evaluation(self):
        self.ranks = 2 if DEVICE == "cpu" or gpu_count() >= 2 else 1
        with temp_dir() as tmp:
            base = os.path.join(tmp, "ranges")
            env = dict(os.environ, NVTX_INJECTION64_PATH=RECORDER, SB_NVTX_RECORD=base)
            args = ["train", "--device", DEVICE, "--model", "mlp", "--data", f"synthetic:1x28x28:10:{TRAIN}:64",
                    "--epochs", str(EPOCHS), "--batch-size", str(BATCH), "--untimed-init"]
            if DEVICE == "cuda":
                args += ["--no-cuda-graph"]  # host ranges around every step's work, not only the captured one's
            command = scalebench_command(self.ranks, *args)
            result = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            files = sorted(glob.glob(base + ".*"))
            self.assertEqual(len(files), self.ranks, "one record per rank: the recorder was not loaded")
            for path in files:
                self.check_process(path)

    def check_process(self, path):
        trees = read_tree(path)
        # The main thread holds every range; no other thread opens one of ours.
        self.assertEqual(len(trees), 1, f"{path}: ranges on {len(trees)} threads")
        top = next(iter(trees.values()))
        self.assertEqual([name for name, _ in top], ["untimed-init"] + [f"epoch {e + 1}" for e in range(EPOCHS)])
        # The untimed initialisation before the training clock: an evaluation batch, then the engine's untimed steps.
        warm_up = [name for name, _ in top[0][1]]
        self.assertEqual(warm_up[0], "evaluation", warm_up)
        self.assertTrue(len(warm_up) > 1 and set(warm_up[1:]) == {"step"}, warm_up)
        epochs = top[1:]
        # backward_overlap is the part of backward that ran beside an all-reduce: measured from events,
        # it has no range of its own (it lies inside "backward").
        phases = [p for p in step_phases() if p != "backward_overlap"]
        steps_per_epoch = TRAIN // self.ranks // BATCH
        for name, children in epochs:
            self.assertEqual([n for n, _ in children], ["step"] * steps_per_epoch + ["evaluation"], name)
            for _, inside in children[:-1]:
                self.assertEqual([n for n, _ in inside], phases, f"{name}: a step's phases")
                if DEVICE == "cuda":  # each bucket's all-reduce, from backward (as gradients finish) or comm
                    buckets = [b for phase, kids in inside for b, _ in kids if phase in ("backward", "comm")]
                    if self.ranks == 1:
                        self.assertEqual(buckets, [], f"{name}: an all-reduce on one rank")
                        continue
                    self.assertTrue(buckets, f"{name}: a step without a bucket all-reduce")
                    self.assertTrue(all(re.fullmatch(r"allreduce bucket \d+", b) for b in buckets), buckets)
                    self.assertEqual(sorted(buckets), sorted(set(buckets)), "a bucket reduced twice in one step")


if __name__ == "__main__":
    unittest.main()
