"""scripts/make_image_data.py imagenet-like: the files do not depend on the number of processes (--jobs), and
the class shows in the pictures."""
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


class ImagenetLike(unittest.TestCase):
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

    def test_the_class_shows_in_a_centre_crops_mean_colour(self):
        # What evaluation sees (the shorter side at 256, the centre 224 x 224) of 3 val images per class,
        # classified by the nearest of the classes' mean colours over 5 train images each: content that
        # ignored the class would score chance, 10%.
        import numpy as np
        from PIL import Image

        def centre_mean_colour(path):
            image = Image.open(path).convert("RGB")
            scale = 256 / min(image.size)
            image = image.resize((round(image.width * scale), round(image.height * scale)), Image.BILINEAR)
            left, top = (image.width - 224) // 2, (image.height - 224) // 2
            return np.asarray(image.crop((left, top, left + 224, top + 224)), np.float32).reshape(-1, 3).mean(0)

        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            r = subprocess.run([sys.executable, SCRIPT, "imagenet-like", out, "--classes", "10", "--train-per-class", "5",
                                "--val-per-class", "3"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            colours = {split: [] for split in ("train", "val")}
            for split in colours:
                for label, name in enumerate(sorted(os.listdir(os.path.join(out, split)))):
                    folder = os.path.join(out, split, name)
                    colours[split] += [(centre_mean_colour(os.path.join(folder, f)), label) for f in sorted(os.listdir(folder))]
        means = np.stack([np.mean([c for c, label in colours["train"] if label == k], axis=0) for k in range(10)])
        right = sum(int(np.argmin(((means - c) ** 2).sum(1)) == label) for c, label in colours["val"])
        self.assertGreaterEqual(right, 9, f"{right} of 30 val images right")  # 16 at --seed 0

    def test_a_bad_job_count_names_the_option(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, SCRIPT, "imagenet-like", os.path.join(d, "o"), "--classes", "1",
                                "--train-per-class", "1", "--val-per-class", "1", "--jobs", "0"],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--jobs '0': expected a whole number >= 1", r.stderr)


if __name__ == "__main__":
    unittest.main()
