"""bench/reference_options.py: pytorch_reference.py's options for image files, checked without PyTorch."""
import io
import os
import sys
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from reference_options import parse_args  # noqa: E402

# scalebench info --models, as bench/scalebench_models.py reads it (three of its models).
LISTED = {name: {"name": name, "input": shape, "classes": classes, "parameters": 1, "outputs_log_probabilities": False}
          for name, shape, classes in (("mnist-cnn", [1, 28, 28], 10), ("wrn", [3, 32, 32], 100),
                                       ("resnet50", [3, 224, 224], 1000))}


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


if __name__ == "__main__":
    unittest.main()
