"""bench/reference_options.py: pytorch_reference.py's options for image files and the learning checks,
checked without PyTorch."""
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from reference_options import parse_args  # noqa: E402

# scalebench info --models, as bench/scalebench_models.py reads it (three of its models).
LISTED = {name: {"name": name, "input": shape, "classes": classes, "parameters": 1, "outputs_log_probabilities": False}
          for name, shape, classes in (("mnist-cnn", [1, 28, 28], 10), ("wrn", [3, 32, 32], 100),
                                       ("resnet18", [3, 224, 224], 1000), ("resnet50", [3, 224, 224], 1000))}


def parse(*argv):
    return parse_args(list(argv), listed=LISTED)


def error_of(*argv):
    stderr = io.StringIO()
    with redirect_stderr(stderr), unittest.TestCase().assertRaises(SystemExit):
        parse(*argv)
    return stderr.getvalue()


class ImageOptions(unittest.TestCase):
    def test_synthetic_runs_keep_their_defaults(self):
        args = parse("--model", "wrn")
        self.assertIsNone(args.image_folder)
        self.assertEqual((args.batch_size, args.epochs, args.steps, args.warmup), (256, 2, 100, 20))
        self.assertEqual(parse("--learn", "fm").epochs, 2)

    def test_a_training_run_from_files(self):
        args = parse("--model", "resnet50", "--data", "imagefolder:/data/img", "--decode", "gpu", "--workers", "15",
                     "--train-limit", "10240", "--precision", "bf16", "--channels-last")
        self.assertEqual(args.image_folder, "/data/img")
        self.assertEqual((args.decoders, args.worker_counts, args.epochs), (["gpu"], [15], 3))
        self.assertEqual((args.image_size, args.prefetch_factor, args.train_limit), (224, 2, 10240))
        self.assertEqual(parse("--model", "resnet50", "--data", "imagefolder:d").decoders, ["cpu"])
        self.assertEqual(parse("--model", "resnet50", "--data", "imagefolder:d").worker_counts, [8])

    def test_io_takes_lists_with_scalebench_ios_defaults(self):
        args = parse("--io", "--data", "imagefolder:d")
        self.assertEqual((args.decoders, args.worker_counts, args.batches), (["cpu", "gpu"], [1, 4, 8, 15], 40))
        args = parse("--io", "--data", "imagefolder:d", "--decode", "gpu", "--workers", "0,2", "--csv", "o.csv")
        self.assertEqual((args.decoders, args.worker_counts, args.csv), (["gpu"], [0, 2], "o.csv"))

    def test_bad_values_name_the_option(self):
        self.assertIn("--data 'tars:d': pytorch_reference.py reads imagefolder:DIR", error_of("--data", "tars:d"))
        self.assertIn("--data 'imagefolder:'", error_of("--data", "imagefolder:"))
        self.assertIn("--decode 'nvjpeg': expected cpu, gpu or cpu,gpu",
                      error_of("--io", "--data", "imagefolder:d", "--decode", "nvjpeg"))
        self.assertIn("--workers '1,x': expected whole numbers >= 0",
                      error_of("--io", "--data", "imagefolder:d", "--workers", "1,x"))
        self.assertIn("--workers '-1'", error_of("--io", "--data", "imagefolder:d", "--workers=-1"))

    def test_combinations_that_cannot_run(self):
        for option in (["--io"], ["--decode", "gpu"], ["--workers", "4"], ["--csv", "x.csv"]):
            self.assertIn("needs --data imagefolder:DIR", error_of(*option))
        self.assertIn("lists are for --io", error_of("--model", "resnet50", "--data", "imagefolder:d", "--workers", "4,8"))
        self.assertIn("lists are for --io", error_of("--model", "resnet50", "--data", "imagefolder:d", "--decode", "cpu,gpu"))
        self.assertIn("the first is not timed", error_of("--model", "resnet50", "--data", "imagefolder:d", "--epochs", "1"))
        self.assertIn("takes 1 channel(s)", error_of("--model", "mnist-cnn", "--data", "imagefolder:d"))
        self.assertIn("leave --dp out", error_of("--model", "resnet50", "--data", "imagefolder:d", "--dp", "2"))
        self.assertIn("--csv writes --io's rows", error_of("--model", "resnet50", "--data", "imagefolder:d", "--csv", "x"))
        self.assertIn("leave --data out", error_of("--model", "resnet50", "--data", "imagefolder:d", "--profile-kernels", "5"))
        self.assertIn("--learn and --time-to-accuracy read their own folders",
                      error_of("--learn", "fm", "--data", "imagefolder:d"))


def touch(root, *relative):
    for path in relative:
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        open(os.path.join(root, path), "wb").close()


class LearnOptions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def folder(self):
        """Two classes, val/ with only the second; hidden entries and files of other kinds left out, as scalebench."""
        touch(self.root, "train/b/2.jpg", "train/b/1.JPEG", "train/b/sub/0.png", "train/b/notes.txt",
              "train/b/.hidden.jpg", "train/a/x.jpg", "train/.cache/y.jpg", "val/b/v.jpg")
        return f"imagefolder:{self.root}"

    def test_the_wrn_check_keeps_its_recipe(self):
        args = parse("--learn", "fm")
        self.assertEqual((args.learn_kind, args.learn, args.model), ("cifar100", "fm", "wrn"))
        self.assertEqual((args.lr, args.momentum, args.weight_decay, args.batch_size, args.epochs), (0.01, 0.0, 0.0, 256, 2))
        self.assertEqual(parse("--learn", "fm", "--lr", "0.05", "--momentum", "0.9").momentum, 0.9)

    def test_an_image_folder_takes_torchvisions_reference_recipe(self):
        args = parse("--learn", self.folder(), "--precision", "bf16", "--channels-last", "--epochs", "8")
        self.assertEqual((args.learn_kind, args.learn, args.model), ("imagefolder", self.root, "resnet18"))
        self.assertEqual((args.lr, args.momentum, args.weight_decay, args.batch_size, args.epochs), (0.1, 0.9, 1e-4, 256, 8))
        self.assertEqual((args.decoders, args.worker_counts, args.image_size), (["cpu"], [8], 224))
        self.assertEqual(parse("--learn", self.folder(), "--model", "resnet50", "--workers", "15").worker_counts, [15])

    def test_the_listing_is_scalebenchs(self):
        classes, train, val = parse("--learn", self.folder()).learn_listing
        self.assertEqual(classes, ["a", "b"])
        relative = [(os.path.relpath(path, self.root), label) for path, label in train]
        self.assertEqual(relative, [("train/a/x.jpg", 0), ("train/b/1.JPEG", 1), ("train/b/2.jpg", 1),
                                    ("train/b/sub/0.png", 1)])
        self.assertEqual([(os.path.relpath(path, self.root), label) for path, label in val], [("val/b/v.jpg", 1)])

    def test_a_bad_folder_is_one_sentence_naming_it(self):
        missing = os.path.join(self.root, "missing")
        self.assertIn(f"--learn imagefolder:{missing}: '{missing}' does not exist or is not a folder; the layout is "
                      "DIR/train/CLASS/IMAGE", error_of("--learn", f"imagefolder:{missing}"))
        touch(self.root, "train/a/x.jpg")
        self.assertIn("has no val/ folder", error_of("--learn", f"imagefolder:{self.root}"))
        os.makedirs(os.path.join(self.root, "val"))
        self.assertIn("val' holds no class folders", error_of("--learn", f"imagefolder:{self.root}"))
        touch(self.root, "val/z/v.jpg")
        self.assertIn("val/z' has no counterpart in train/", error_of("--learn", f"imagefolder:{self.root}"))
        touch(self.root, "train/z/readme.txt")
        self.assertIn("train/z' holds no images (files ending .jpg", error_of("--learn", f"imagefolder:{self.root}"))

    def test_combinations_that_cannot_run(self):
        folder = self.folder()
        self.assertIn("--model wrn has none here", error_of("--learn", folder, "--model", "wrn"))
        self.assertIn("--learn DIR trains the wrn on CIFAR-100 binary files", error_of("--learn", "fm", "--model", "resnet18"))
        self.assertIn("leave --decode out", error_of("--learn", folder, "--decode", "gpu"))
        self.assertIn("leave --train-limit out", error_of("--learn", folder, "--train-limit", "100"))
        self.assertIn("lists are for --io", error_of("--learn", folder, "--workers", "4,8"))
        self.assertIn("--workers needs --data imagefolder:DIR or --learn imagefolder:DIR",
                      error_of("--learn", "fm", "--workers", "4"))
        self.assertIn("--lr sets the recipe of --learn; leave it out", error_of("--model", "wrn", "--lr", "0.1"))
        self.assertIn("--lr must be positive, --momentum and --weight-decay not negative",
                      error_of("--learn", folder, "--weight-decay=-1"))


if __name__ == "__main__":
    unittest.main()
