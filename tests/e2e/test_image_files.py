"""Training from image files on the CPU: an image folder and tar shards (on 2 ranks) train with their
input pipeline's phases in the results; a bad file ends the job naming it and the rank (--bad-images fail),
or is skipped and counted (skip); the options that image files rule out are refused before anything is
read; `scalebench io` measures the pipeline alone."""
import csv
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import recorded_config, run_scalebench, temp_dir  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "make_image_data.py")
# cifar-cnn takes 3x32x32: the folder's images are cropped to 32 and evaluated from 36.
SMALL = ["--model", "cifar-cnn", "--image-size", "32", "--val-resize", "36", "--batch-size", "16", "--epochs", "2",
         "--workers", "2"]


def epochs_of(path):
    import h5py
    with h5py.File(path, "r") as f:
        return f["epochs"][()]


class ImageFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp_dir = temp_dir()
        cls.tmp = cls.tmp_dir.name
        cls.folder = os.path.join(cls.tmp, "images")
        subprocess.run([sys.executable, SCRIPT, "synthetic", cls.folder, "--classes", "3", "--train-per-class", "16",
                        "--val-per-class", "4", "--size", "40"], check=True, capture_output=True)
        cls.shards = os.path.join(cls.tmp, "shards")
        r = run_scalebench(1, "pack", cls.folder, cls.shards, "--shard-size", "8")
        assert r.returncode == 0, r.stderr

    @classmethod
    def tearDownClass(cls):
        cls.tmp_dir.cleanup()

    def bad_copy(self, name, content):
        """A copy of the folder with one bad training file; returns the folder and the file."""
        folder = os.path.join(self.tmp, name)
        shutil.copytree(self.folder, folder)
        classes = sorted(os.listdir(os.path.join(folder, "train")))
        bad = os.path.join(folder, "train", classes[1], "zz-bad.jpg")
        with open(bad, "wb") as f:
            f.write(content)
        return folder, bad

    def test_a_folder_trains_and_records_its_input_phases(self):
        out = os.path.join(self.tmp, "folder.h5")
        r = run_scalebench(1, "train", *SMALL, "--data", "imagefolder:" + self.folder, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        epochs = epochs_of(out)
        self.assertEqual(len(epochs), 2)
        for e in epochs:
            self.assertGreater(e["input_decode_s"], 0)
            self.assertGreater(e["input_read_s"], 0)
            self.assertGreater(e["input_bytes_per_s"], 0)
            self.assertGreater(e["input_images_per_worker_s"], 0)
            self.assertEqual(e["images_skipped"], 0)
            self.assertGreaterEqual(e["test_accuracy"], 0)

    def test_shards_train_on_two_ranks(self):
        out = os.path.join(self.tmp, "shards.h5")
        r = run_scalebench(2, "train", *SMALL, "--data", "tars:" + self.shards, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(epochs_of(out)), 2)

    def first_jpeg(self):
        for root, _, names in sorted(os.walk(os.path.join(self.folder, "val"))):
            for name in sorted(names):
                if name.endswith(".jpg"):
                    with open(os.path.join(root, name), "rb") as f:
                        return f.read()
        raise AssertionError("no JPEG in the generated folder")

    def test_fewer_shards_than_ranks_is_refused_before_training(self):
        one_shard = os.path.join(self.tmp, "one-shard")
        r = run_scalebench(1, "pack", self.folder, one_shard, "--shard-size", "1000")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run_scalebench(2, "train", *SMALL, "--data", "tars:" + one_shard)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("has 1 training shard(s) for 2 ranks", r.stderr)
        self.assertEqual(r.stderr.count("training shard(s)"), 1, r.stderr)  # one sentence for the job

    def test_a_truncated_file_ends_the_job_naming_it_and_the_rank(self):
        folder, bad = self.bad_copy("truncated", self.first_jpeg()[:200])
        out = os.path.join(self.tmp, "fail.h5")
        r = run_scalebench(2, "train", *SMALL, "--data", "imagefolder:" + folder, "--out", out)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(bad, r.stderr)
        self.assertRegex(r.stderr, r"rank [01]")
        self.assertIn("--bad-images skip", r.stderr)

    def test_skip_trains_past_a_text_file_and_counts_it(self):
        folder, _ = self.bad_copy("text", b"not an image\n")
        out = os.path.join(self.tmp, "skip.h5")
        r = run_scalebench(1, "train", *SMALL, "--data", "imagefolder:" + folder, "--bad-images", "skip", "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([e["images_skipped"] for e in epochs_of(out)], [1, 1])

    def test_skip_never_fails_a_batch_whatever_the_seed_and_names_the_file(self):
        # 5 training images (one empty) in batches of 2: under some seeds the empty file is alone in the
        # last batch, and it takes the next image of the listing instead.
        folder, bad = self.tiny_folder_with_an_empty_file("tiny", "empty.png")
        for seed in range(1, 11):
            out = os.path.join(self.tmp, "seed%d.h5" % seed)
            r = self.train_skipping(folder, seed, out)
            self.assertEqual(r.returncode, 0, "seed %d: %s" % (seed, r.stderr))
            self.assertIn("epoch 1: --bad-images skip left out 1 file that can't be read or decoded: " + bad, r.stdout)
            self.assertEqual([e["images_skipped"] for e in epochs_of(out)], [1])

    def test_gpu_decoding_substitutes_a_bad_image_as_the_cpu_decoder_does(self):
        info = run_scalebench(1, "info")
        usable = run_scalebench(1, "info", "--device", "cuda").returncode == 0
        if not usable or "nvjpeg (not built in)" in info.stdout:
            self.skipTest("needs a CUDA device and nvJPEG")
        folder, bad = self.tiny_folder_with_an_empty_file("tiny-gpu", "empty.jpg")
        for seed in range(1, 4):
            out = os.path.join(self.tmp, "gpu-seed%d.h5" % seed)
            r = self.train_skipping(folder, seed, out, "--device", "cuda", "--decode", "gpu")
            self.assertEqual(r.returncode, 0, "seed %d: %s" % (seed, r.stderr))
            # The host pipeline builds batches ahead, into epochs the run never reaches; only the batches a
            # step takes count (docs/image_data.md), so exactly the one the epoch trained on.
            self.assertIn("epoch 1: --bad-images skip left out 1 file that can't be read or decoded: " + bad, r.stdout)
            self.assertEqual([e["images_skipped"] for e in epochs_of(out)], [1])

    def tiny_folder_with_an_empty_file(self, name, file_name):
        """A tiny folder whose first training class holds one more file, empty; returns the folder and the file."""
        folder = self.tiny_folder(name)
        bad = os.path.join(folder, "train", sorted(os.listdir(os.path.join(folder, "train")))[0], file_name)
        open(bad, "wb").close()
        return folder, bad

    def train_skipping(self, folder, seed, out, *options):
        """One epoch of the tiny folder in batches of 2 under --bad-images skip."""
        return run_scalebench(1, "train", "--model", "cifar-cnn", "--image-size", "32", "--batch-size", "2", "--epochs", "1",
                              "--workers", "1", "--seed", str(seed), "--data", "imagefolder:" + folder, "--bad-images",
                              "skip", "--out", out, *options)

    def tiny_folder(self, name, size=40):
        """A folder of 2 classes of 2 training images and 1 validation image each."""
        folder = os.path.join(self.tmp, name)
        subprocess.run([sys.executable, SCRIPT, "synthetic", folder, "--classes", "2", "--train-per-class", "2",
                        "--val-per-class", "1", "--size", str(size)], check=True, capture_output=True)
        return folder

    def test_the_crops_follow_the_models_input_unless_sized(self):
        folder = self.tiny_folder("small", size=32)
        out = os.path.join(self.tmp, "default-model.h5")
        r = run_scalebench(1, "train", "--data", "imagefolder:" + folder, "--epochs", "1", "--workers", "1", "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        config = recorded_config(out)
        self.assertEqual((config["model"], config["image_size"], config["val_resize"]), ("mnist-cnn", 28, 32))
        self.assertNotIn("upscaling", r.stdout)
        # A model of 32-pixel inputs takes 32-pixel crops, evaluated from 36.
        out = os.path.join(self.tmp, "cifar-model.h5")
        r = run_scalebench(1, "train", "--model", "cifar-cnn", "--batch-size", "2", "--data", "imagefolder:" + folder,
                           "--epochs", "1", "--workers", "1", "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual((recorded_config(out)["image_size"], recorded_config(out)["val_resize"]), (32, 36))
        # Crops larger than most images are trained on, with one line that says so.
        r = run_scalebench(1, "train", "--model", "resnet18-cifar", "--batch-size", "2", "--image-size", "64",
                           "--data", "imagefolder:" + folder, "--epochs", "1", "--workers", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("upscaling: most images are 32x32, smaller than the 64x64 crop; give --image-size 32"),
                         1, r.stdout)

    def test_hidden_folders_are_left_out_and_named(self):
        folder = self.tiny_folder("hidden")
        first_class = sorted(os.listdir(os.path.join(folder, "train")))[0]
        shutil.copytree(os.path.join(folder, "train", first_class), os.path.join(folder, "train", ".ipynb_checkpoints"))
        shutil.copy(os.path.join(folder, "val", first_class, sorted(os.listdir(os.path.join(folder, "val", first_class)))[0]),
                    os.path.join(folder, "train", first_class, "._copy.png"))
        r = run_scalebench(1, "train", "--data", "imagefolder:" + folder, "--epochs", "1", "--workers", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(" 4 images at ", r.stdout)  # the 4 training images; not the hidden folder's 2 as a class of its own
        self.assertIn("left out, hidden: train/.ipynb_checkpoints, train/%s/._copy.png" % first_class, r.stdout)

    def test_a_link_to_nothing_is_refused_or_left_out_under_skip(self):
        folder = self.tiny_folder("dangling")
        first_class = sorted(os.listdir(os.path.join(folder, "train")))[0]
        link = os.path.join(folder, "train", first_class, "gone.png")
        os.symlink(os.path.join(self.tmp, "no-such-file.png"), link)
        r = run_scalebench(1, "train", "--data", "imagefolder:" + folder, "--epochs", "1", "--workers", "1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("'%s' is a link to nothing" % link, r.stderr)
        self.assertNotIn("epoch 1", r.stdout)
        r = run_scalebench(1, "train", "--data", "imagefolder:" + folder, "--epochs", "1", "--workers", "1",
                           "--bad-images", "skip")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("left out, links to nothing (--bad-images skip): train/%s/gone.png" % first_class, r.stdout)

    def test_options_image_files_rule_out_are_refused_before_reading(self):
        missing = os.path.join(self.tmp, "absent")
        r = run_scalebench(1, "train", *SMALL, "--data", "imagefolder:" + missing, "--parallel", "dp")
        self.assertEqual(r.returncode, 2)
        self.assertIn("need --parallel ddp", r.stderr)
        r = run_scalebench(1, "train", *SMALL, "--data", "synthetic", "--decode", "gpu", "--device", "cuda")
        self.assertEqual(r.returncode, 2)
        r = run_scalebench(1, "train", *SMALL, "--data", "imagefolder:" + self.folder, "--val-resize", "20")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--val-resize 20 is smaller than --image-size 32", r.stderr)

    def test_io_measures_the_pipeline_alone(self):
        out = os.path.join(self.tmp, "io.csv")
        r = run_scalebench(1, "io", "--data", "tars:" + self.shards, "--decode", "cpu", "--workers", "1,2",
                           "--batch-size", "8", "--batches", "4", "--warm-up", "1", "--image-size", "32",
                           "--target-rate", "100000", "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([(row["decode"], row["workers"]) for row in rows], [("cpu", "1"), ("cpu", "2")])
        for row in rows:
            self.assertGreater(float(row["images_per_s"]), 0)
            self.assertGreater(float(row["mb_per_s"]), 0)
        self.assertIn("100000 img/s with --decode cpu needs about", r.stdout)
        r = run_scalebench(1, "io", "--data", "synthetic")
        self.assertEqual(r.returncode, 2)
        self.assertIn("held decoded in memory", r.stderr)


if __name__ == "__main__":
    unittest.main()
