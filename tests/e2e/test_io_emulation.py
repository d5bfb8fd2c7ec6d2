"""`scalebench io --emulate-gpus`: can this storage feed N GPUs? On the CPU with --decode cpu: one worker
cannot feed a GPU of 6,000 img/s (AU below 90%, decode the limit) and easily feeds one of 50 img/s (AU at
least 90%: it needs a few milliseconds of a core for each 160 ms step); on 2 ranks a row per count of GPUs per node and the largest count at the bar; --rate-from
takes a train run's rate; --cold-cache says whether the page cache was defeated; the results file holds
the job's row and each node's per count; bad input (--decode gpu where there is no GPU or nvJPEG among
it) is refused with one sentence before any work."""
import csv
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "make_image_data.py")
# 224-pixel JPEGs: one CPU worker decodes and crops a few hundred to a thousand a second.
STEPS = ["--batch-size", "8", "--batches", "10", "--warm-up", "2", "--workers", "1"]
ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)%\s+\d+\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\s+(\w+)\s*$", re.M)


def rows_of(path):
    with open(path) as f:
        return list(csv.DictReader(f))


class IoEmulation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp_dir = temp_dir()
        cls.tmp = cls.tmp_dir.name
        cls.folder = os.path.join(cls.tmp, "images")
        subprocess.run([sys.executable, SCRIPT, "synthetic", cls.folder, "--classes", "2", "--train-per-class", "64",
                        "--val-per-class", "2", "--size", "224"], check=True, capture_output=True)
        cls.data = "imagefolder:" + cls.folder

    @classmethod
    def tearDownClass(cls):
        cls.tmp_dir.cleanup()

    def emulate(self, np, counts, *extra, name="io.csv"):
        """The output, the job's rows (node "all") and each node's rows."""
        out = os.path.join(self.tmp, name)
        r = run_scalebench(np, "io", "--data", self.data, "--decode", "cpu", "--emulate-gpus", counts, *STEPS, *extra,
                           "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = rows_of(out)
        return r.stdout, [row for row in rows if row["node"] == "all"], [row for row in rows if row["node"] != "all"]

    def test_one_worker_cannot_feed_a_fast_gpu_and_names_decode(self):
        out, rows, _ = self.emulate(1, "1", "--target-rate", "6000", name="fast.csv")
        self.assertEqual(len(rows), 1)
        self.assertLess(float(rows[0]["accelerator_utilisation"]), 0.9)
        self.assertEqual(rows[0]["limit"], "decode")
        self.assertIn("no count kept AU >= 90%", out)
        self.assertIn("decode limited", out)
        self.assertRegex(out, r"about \d+ worker\(s\) a rank would feed")

    def test_one_worker_feeds_a_slow_gpu(self):
        out, rows, _ = self.emulate(1, "1", "--target-rate", "50", name="slow.csv")
        self.assertGreaterEqual(float(rows[0]["accelerator_utilisation"]), 0.9)
        self.assertEqual(rows[0]["limit"], "compute")
        self.assertIn("the largest count that keeps AU >= 90%: 1 emulated GPU(s) per node", out)
        self.assertIn("page cache: not defeated (--cold-cache not given)", out)

    def test_two_ranks_print_a_row_per_count_and_the_largest_at_the_bar(self):
        out, rows, nodes = self.emulate(2, "1,2,4", "--target-rate", "100", "--cold-cache", name="two.csv")
        printed = ROW.findall(out)
        self.assertEqual([int(count) for count, _, _ in printed], [1, 2, 4], out)
        self.assertEqual([(r["emulated_gpus_per_node"], r["emulated_gpus"]) for r in rows], [("1", "1"), ("2", "2"), ("4", "4")])
        # Both ranks run on this host: one node, whose figures are the job's.
        self.assertEqual(len({r["node"] for r in nodes}), 1)
        self.assertEqual([r["emulated_gpus_per_node"] for r in nodes], ["1", "2", "4"])
        for job, node in zip(rows, nodes):
            self.assertEqual(node["accelerator_utilisation"], job["accelerator_utilisation"])
            self.assertEqual(node["mb_per_s"], job["mb_per_s_per_node"])
        self.assertNotIn("node " + nodes[0]["node"] + ":", out)  # per-node lines only for a job of several nodes
        for r in rows:
            self.assertGreater(float(r["mb_per_s"]), 0)
            self.assertGreater(float(r["files_per_s"]), 0)
        self.assertIn("2 rank(s) on 1 node(s)", out)
        self.assertRegex(out, r"page cache: (dropped after each read \(fadvise\)|not defeated \(.+\))")
        passing = [int(r["emulated_gpus_per_node"]) for r in rows if float(r["accelerator_utilisation"]) >= 0.9]
        if passing:
            self.assertIn("the largest count that keeps AU >= 90%%: %d emulated GPU(s) per node" % max(passing), out)
        else:
            self.assertIn("no count kept AU >= 90%", out)

    def test_the_rate_can_come_from_a_train_run(self):
        h5 = os.path.join(self.tmp, "train.h5")
        r = run_scalebench(1, "train", "--model", "cifar-cnn", "--image-size", "32", "--val-resize", "36", "--batch-size",
                           "16", "--epochs", "2", "--workers", "1", "--data", self.data, "--out", h5)
        self.assertEqual(r.returncode, 0, r.stderr)
        import h5py
        with h5py.File(h5, "r") as f:
            rate = f["epochs"]["images_per_s"][1]  # the steady epoch: the second of two, over 1 GPU
        out, rows, _ = self.emulate(1, "1", "--rate-from", h5, "--image-size", "32", name="from.csv")
        self.assertAlmostEqual(float(rows[0]["rate_per_gpu"]), rate, delta=rate * 1e-4)
        self.assertIn("--rate-from " + h5 + ", its median steady epoch", out)

    def test_bad_input_is_refused_in_one_sentence_before_any_work(self):
        out = os.path.join(self.tmp, "never.csv")
        cases = [
            (["--emulate-gpus", "1,0", "--target-rate", "100"], "--emulate-gpus '1,0': '0' is not a count"),
            (["--emulate-gpus", "1", "--rate-from", os.path.join(self.tmp, "missing.h5")], "--rate-from"),
            (["--emulate-gpus", "1", "--decode", "cpu,cpu", "--target-rate", "100"], "one decoder"),
            (["--emulate-gpus", "1"], "needs the rate of one GPU"),
            (["--emulate-gpus", "1", "--target-rate", "100", "--workers", "1,2"], "one --workers count"),
            (["--cold-cache"], "add --emulate-gpus"),
        ]
        for extra, words in cases:
            r = run_scalebench(1, "io", "--data", self.data, *extra, "--out", out)
            self.assertEqual(r.returncode, 2, (extra, r.stderr))
            self.assertIn(words, r.stderr)
            self.assertEqual(r.stdout.strip(), "", extra)
        self.assertFalse(os.path.exists(out) and os.path.getsize(out) > 0)
        r = run_scalebench(2, "io", "--data", self.data, "--decode", "cpu")
        self.assertEqual(r.returncode, 2)
        self.assertIn("give --emulate-gpus LIST", r.stderr)

    def test_gpu_decoding_runs_where_nvjpeg_and_a_gpu_are_and_is_refused_elsewhere(self):
        out = os.path.join(self.tmp, "gpu.csv")
        r = run_scalebench(1, "io", "--data", self.data, "--decode", "gpu", "--emulate-gpus", "1,2", *STEPS,
                           "--target-rate", "100", "--out", out)
        if "needs nvJPEG" in r.stderr:
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertRegex(r.stderr, r"--decode gpu needs nvJPEG and a visible GPU; this scalebench "
                                       r"(sees no GPU|was built without nvJPEG): use --decode cpu")
            self.assertEqual(r.stdout.strip(), "")
            self.assertFalse(os.path.exists(out))
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--decode gpu", r.stdout)
        rows = [row for row in rows_of(out) if row["node"] == "all"]
        self.assertEqual([(row["decode"], row["emulated_gpus_per_node"]) for row in rows], [("gpu", "1"), ("gpu", "2")])
        for row in rows:
            self.assertGreater(float(row["files_per_s"]), 0)
            self.assertGreater(float(row["copy_s"]), 0)  # each batch copied into the step's input
            self.assertIn(row["limit"], ("compute", "read", "decode", "copy"))

    def test_an_existing_out_is_refused_and_kept(self):
        out = os.path.join(self.tmp, "earlier.csv")
        with open(out, "w") as f:
            f.write("earlier rows\n")
        before = os.stat(out).st_mtime_ns
        r = run_scalebench(1, "io", "--data", self.data, "--decode", "cpu", "--emulate-gpus", "1", "--target-rate",
                           "100", "--out", out)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--out {out} already exists", r.stderr)
        self.assertEqual(r.stdout.strip(), "")
        with open(out) as f:
            self.assertEqual(f.read(), "earlier rows\n")
        self.assertEqual(os.stat(out).st_mtime_ns, before)


if __name__ == "__main__":
    unittest.main()
