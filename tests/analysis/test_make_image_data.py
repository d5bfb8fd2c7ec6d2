"""scripts/make_image_data.py imagenet-like --jobs: the files do not depend on the number of processes."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "make_image_data.py")


def files_of(root):
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                out[os.path.relpath(os.path.join(folder, name), root)] = f.read()
    return out


class ImagenetLikeJobs(unittest.TestCase):
    def test_one_and_three_processes_write_the_same_files(self):
        with tempfile.TemporaryDirectory() as d:
            outputs = []
            for jobs in ("1", "3"):
                out = os.path.join(d, f"jobs{jobs}")
                r = subprocess.run([sys.executable, SCRIPT, "imagenet-like", out, "--classes", "2", "--train-per-class", "8",
                                    "--val-per-class", "1", "--mixed-formats", "--jobs", jobs],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("18 images", r.stdout)
                self.assertIn("unusual formats: {'progressive': 1, 'grey': 1}", r.stdout)
                outputs.append(files_of(out))
        self.assertEqual(len(outputs[0]), 18)
        self.assertEqual(outputs[0], outputs[1])
        # The unusual kinds go round across classes in the order a single process meets them: the eighth train
        # image of class 0 is the progressive JPEG, class 1's the grey one.
        names = sorted(outputs[0])
        self.assertIn(os.path.join("train", "n00000000", "train_0000_000007.jpg"), names)
        self.assertIn(os.path.join("train", "n00000001", "train_0001_000007.jpg"), names)
        self.assertEqual(sum(name.endswith(".JPEG") for name in names), 16)

    def test_a_bad_job_count_names_the_option(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, SCRIPT, "imagenet-like", os.path.join(d, "o"), "--classes", "1",
                                "--train-per-class", "1", "--val-per-class", "1", "--jobs", "0"],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--jobs '0': expected a whole number >= 1", r.stderr)


if __name__ == "__main__":
    unittest.main()
