"""`scalebench pack` on a small generated image folder: shards that Python's tarfile reads, each sample a
source file's bytes under its class's label, classes.txt in label order, and the refusals (an existing
destination, more than one rank, a bad layout, a file that does not decode) before anything is written;
--bad-images skip leaves such files out, and hidden folders are left out, each named."""
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench, temp_dir  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "make_image_data.py")


def digest(data):
    return hashlib.sha256(data).hexdigest()


class Pack(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp_dir = temp_dir()
        cls.tmp = cls.tmp_dir.name
        cls.src = os.path.join(cls.tmp, "images")
        subprocess.run([sys.executable, SCRIPT, "synthetic", cls.src, "--classes", "3", "--train-per-class", "7",
                        "--val-per-class", "2", "--size", "16"], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp_dir.cleanup()

    def source_labels(self, split):
        """sha256 of each source file -> its class name."""
        out = {}
        root = os.path.join(self.src, split)
        for cls in os.listdir(root):
            for name in os.listdir(os.path.join(root, cls)):
                with open(os.path.join(root, cls, name), "rb") as f:
                    out[digest(f.read())] = cls
        return out

    def test_shards_hold_every_file_under_its_label(self):
        dst = os.path.join(self.tmp, "shards")
        r = run_scalebench(1, "pack", self.src, dst, "--shard-size", "5")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("3 classes; train: 21 samples in 5 shards; val: 6 samples in 2 shards", r.stdout)
        with open(os.path.join(dst, "classes.txt")) as f:
            classes = f.read().split()
        self.assertEqual(classes, ["class0000", "class0001", "class0002"])
        self.assertEqual(sorted(os.listdir(dst)), ["classes.txt"] + [f"train-{i:06d}.tar" for i in range(5)]
                         + ["val-000000.tar", "val-000001.tar"])
        for split, shards, count in (("train", 5, 21), ("val", 2, 6)):
            expected = self.source_labels(split)
            seen = []
            for i in range(shards):
                with tarfile.open(os.path.join(dst, f"{split}-{i:06d}.tar")) as tar:
                    members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
                keys = sorted({name.split(".")[0] for name in members})
                for key in keys:
                    image = members[key + ".jpg"]
                    label = int(members[key + ".cls"])
                    self.assertEqual(classes[label], expected[digest(image)], f"{split} {key}")
                    seen.append(digest(image))
            self.assertEqual(len(seen), count)
            self.assertEqual(set(seen), set(expected))

    def test_refusals_before_any_work(self):
        dst = os.path.join(self.tmp, "refused")
        os.makedirs(dst)
        with open(os.path.join(dst, "keep"), "w") as f:
            f.write("x")
        r = run_scalebench(1, "pack", self.src, dst)
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"the destination '{dst}' is not empty; pack never overwrites", r.stderr)
        self.assertEqual(os.listdir(dst), ["keep"])
        r = run_scalebench(2, "pack", self.src, os.path.join(self.tmp, "two"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("pack runs on one process; start it without mpirun (or with -np 1)", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "two")))
        r = run_scalebench(1, "pack", os.path.join(self.src, "train"), os.path.join(self.tmp, "bad"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("has no train/ folder", r.stderr)
        r = run_scalebench(1, "pack", self.src, os.path.join(self.tmp, "zero"), "--shard-size", "0")
        self.assertIn("--shard-size 0: a shard holds at least 1 sample", r.stderr)

    def bad_copy(self, name):
        """A copy of the source with a truncated JPEG and a 16-bit PNG in train/; returns it and the two files."""
        src = os.path.join(self.tmp, name)
        shutil.copytree(self.src, src)
        folder = os.path.join(src, "train", "class0001")
        with open(os.path.join(folder, sorted(os.listdir(folder))[0]), "rb") as f:
            jpeg = f.read()
        truncated = os.path.join(folder, "zz-truncated.jpg")
        with open(truncated, "wb") as f:
            f.write(jpeg[:len(jpeg) // 2])
        from PIL import Image
        deep = os.path.join(folder, "zz-deep.png")
        Image.new("I;16", (8, 8), 4000).save(deep)
        return src, truncated, deep

    def test_files_that_do_not_decode_are_refused_before_writing(self):
        src, truncated, deep = self.bad_copy("bad-source")
        dst = os.path.join(self.tmp, "bad-shards")
        r = run_scalebench(1, "pack", src, dst, "--workers", "2")
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn(deep + "': PNG is 16 bits per channel", r.stderr)  # the first in the listing's order
        self.assertIn("(and 1 other file(s)); nothing was written", r.stderr)
        self.assertFalse(os.path.exists(dst))
        os.remove(deep)
        r = run_scalebench(1, "pack", src, dst)
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn(truncated + "': invalid JPEG: Premature end of JPEG file (the file is cut short); nothing was written",
                      r.stderr)
        self.assertFalse(os.path.exists(dst))

    def test_skip_leaves_out_files_that_do_not_decode_and_hidden_folders(self):
        src, truncated, deep = self.bad_copy("skip-source")
        shutil.copytree(os.path.join(src, "train", "class0000"), os.path.join(src, "train", ".ipynb_checkpoints"))
        dst = os.path.join(self.tmp, "skip-shards")
        r = run_scalebench(1, "pack", src, dst, "--bad-images", "skip")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("left out, hidden: train/.ipynb_checkpoints", r.stdout)
        self.assertIn("--bad-images skip left out 2 file(s)", r.stdout)
        self.assertIn(truncated, r.stdout)
        self.assertIn(deep, r.stdout)
        self.assertIn("3 classes; train: 21 samples", r.stdout)


if __name__ == "__main__":
    unittest.main()
