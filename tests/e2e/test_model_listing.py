"""The model registry as programs outside scalebench read it: `scalebench info --models` prints one JSON
object per model, in the order and with the names that `train --help` lists; bench/scalebench_models.py
reads the same list (also when started under mpiexec); the PyTorch twin has a model for every name; an
unknown model or data form is refused naming the value and listing the valid ones."""
import ast
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import run_scalebench  # noqa: E402

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, BENCH)
from scalebench_models import listed_models  # noqa: E402


def help_models(help_text):
    """The names of the `models (--model):` section of --help, in order."""
    lines = help_text.split("models (--model):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [line.split()[0] for line in lines if line.strip()]


def twin_names():
    """The keys of TWINS in bench/sb_torch_models.py, read without importing PyTorch."""
    with open(os.path.join(BENCH, "sb_torch_models.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TWINS" for t in node.targets):
            return [key.value for key in node.value.keys]
    raise AssertionError("bench/sb_torch_models.py has no TWINS")


class ModelListing(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        result = run_scalebench(1, "info", "--models", timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        cls.models = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]

    def test_one_object_per_model_in_the_help_order(self):
        result = run_scalebench(1, "train", "--help", timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([m["name"] for m in self.models], help_models(result.stdout))
        by_name = {m["name"]: m for m in self.models}
        self.assertEqual((by_name["mnist-cnn"]["input"], by_name["mnist-cnn"]["classes"]), ([1, 28, 28], 10))
        self.assertEqual(by_name["mnist-cnn"]["parameters"], 1_199_882)
        self.assertIs(by_name["mnist-cnn"]["outputs_log_probabilities"], True)
        self.assertEqual((by_name["wrn"]["input"], by_name["wrn"]["classes"], by_name["wrn"]["parameters"]),
                         ([3, 32, 32], 100, 17_175_444))
        for m in self.models:
            self.assertTrue(m["description"], m["name"])

    def test_the_python_reader_sees_the_same_list(self):
        listed = listed_models(os.environ["SCALEBENCH"])
        self.assertEqual(list(listed.values()), self.models)

    def test_the_pytorch_twin_has_every_model(self):
        self.assertEqual(sorted(twin_names()), sorted(m["name"] for m in self.models))

    def test_unknown_names_are_refused_listing_the_valid_ones(self):
        result = run_scalebench(1, "train", "--model", "alexnet", "--data", "synthetic:1x8x8:4:64:16", "--epochs", "1",
                                timeout=120)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("'alexnet'", result.stderr)
        for m in self.models:
            self.assertIn(m["name"], result.stderr)
        result = run_scalebench(1, "comm", "--comm-model", "alexnet", timeout=120)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("--comm-model", result.stderr)
        self.assertIn("'alexnet'", result.stderr)
        result = run_scalebench(1, "train", "--model", "mlp", "--data", "imagenet:/x", "--epochs", "1", timeout=120)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("--data 'imagenet:/x'", result.stderr)
        self.assertIn("valid forms are fashion-mnist", result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
