"""Learning references (`--reference` JSON with "mode": "learn"): the "Learning against the reference"
section's numbers, the curves figure's reference lines, the refusal of a JSON that is neither kind, and
throughput references working as before."""
import json
import os
import unittest

import fixtures
from fixtures import epoch
from report_test_util import TempDirTest, read_csv, run_report

import plots  # noqa: E402
from learning_comparison import compare_learning  # noqa: E402
from scalebench_results import load_reference, load_result  # noqa: E402
from scaling_series import all_runs  # noqa: E402

RECIPE = {"model": "resnet18", "epochs": 3, "batch_size": 256, "lr": 0.1, "precision": "bf16"}


def learning_json(path, seed, accuracies, losses=None, **overrides):
    """A JSON shaped as bench/torch_image_learning.py writes it: the recipe, the final accuracy and one entry per epoch."""
    history = [{"epoch": n + 1, "seconds": 10.0 * (n + 1), "test_accuracy": a} for n, a in enumerate(accuracies)]
    for entry, loss in zip(history, losses or []):
        entry["train_loss"] = loss
    document = dict(RECIPE, label="PyTorch 2.11.0 resnet18 SGD", mode="learn", seed=seed,
                    test_accuracy=accuracies[-1], history=history, device="NVIDIA H100", torch_version="2.11.0")
    document.update(overrides)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    return path


def learning_section(text):
    """The "Learning against the reference" section of report.py's text, up to the next section."""
    start = text.index("## Learning against the reference")
    end = text.find("\n## ", start)
    return text[start:end if end >= 0 else len(text)]


def learning_run(path, seed, accuracies, **config):
    rows = [epoch(n + 1, 1.0, 1000.0, test_accuracy=a) for n, a in enumerate(accuracies)]
    return fixtures.write_run(path, 1, rows, cfg=fixtures.config(**dict(RECIPE, seed=seed, **config)))


class LearningSectionTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.runs = [learning_run(self.path("sb-1.h5"), 1, [0.30, 0.50, 0.70]),
                     learning_run(self.path("sb-2.h5"), 2, [0.34, 0.54, 0.72])]
        self.references = [learning_json(self.path("pt-1.json"), 1, [0.32, 0.50, 0.69], [3.0, 2.0, 1.5]),
                           learning_json(self.path("pt-2.json"), 2, [0.30, 0.52, 0.70], [3.1, 2.1, 1.4])]

    def report_text(self, runs, references):
        result = run_report(*runs, *[arg for ref in references for arg in ("--reference", ref)])
        self.assert_ok(result)
        return result.stdout

    def test_epoch_table_and_final_accuracy(self):
        text = self.report_text(self.runs, self.references)
        section = learning_section(text)
        self.assertIn("### resnet18, 3 epochs", section)
        self.assertIn(f"scalebench: {self.runs[0]} (seed 1), {self.runs[1]} (seed 2)", section)
        self.assertIn(f"{self.references[0]} (seed 1), {self.references[1]} (seed 2)", section)
        self.assertIn("| epoch | scalebench seed 1 | scalebench seed 2 | scalebench mean | PyTorch seed 1 | "
                      "PyTorch seed 2 | PyTorch mean | scalebench - PyTorch (points) |", section)
        rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
                for line in section.splitlines() if line.startswith("|") and line.split("|")[1].strip().isdigit()}
        self.assertEqual(rows["1"], ["30.00%", "34.00%", "32.00%", "32.00%", "30.00%", "31.00%", "+1.00"])
        self.assertEqual(rows["2"], ["50.00%", "54.00%", "52.00%", "50.00%", "52.00%", "51.00%", "+1.00"])
        self.assertEqual(rows["3"], ["70.00%", "72.00%", "71.00%", "69.00%", "70.00%", "69.50%", "+1.50"])
        self.assertIn("Final test accuracy (epoch 3): scalebench 71.00% (mean of 2 runs, 70.00%-72.00%), PyTorch "
                      "69.50% (mean of 2 runs, 69.00%-70.00%); scalebench - PyTorch = +1.50 points.", section)
        self.assertNotIn("Settings that differ", section)
        self.assertNotIn("Not compared", section)
        self.assertIn("| learning reference |", text)  # the inputs table names the references

    def test_different_epoch_count_is_not_compared(self):
        other = learning_json(self.path("pt-long.json"), 1, [0.3, 0.5, 0.6, 0.7], epochs=4)
        text = self.report_text(self.runs, [other])
        section = learning_section(text)
        self.assertNotIn("Final test accuracy", section)
        self.assertIn(f"Not compared: {other} (resnet18, 4 epochs): no run file of the same model and epoch count "
                      "among the inputs (the run files: resnet18, 3 epochs).", section)
        self.assertIn(f"Not compared: {self.runs[0]} (resnet18, 3 epochs): no learning reference", section)

    def test_a_different_recipe_is_named(self):
        fp32 = learning_json(self.path("pt-fp32.json"), 1, [0.3, 0.5, 0.7], precision="fp32")
        self.assertIn("Settings that differ, which change the curves too: precision scalebench bf16, PyTorch fp32.",
                      self.report_text(self.runs[:1], [fp32]))

    def test_curves_figure_shows_the_references(self):
        comparison = compare_learning([load_result(p) for p in self.runs], [load_reference(p) for p in self.references])
        fig = plots.curves_figure(all_runs([load_result(p) for p in self.runs]), comparison.groups[0].reference_curves)
        loss, accuracy = fig.axes
        lines = {line.get_label(): line for line in accuracy.get_lines()}
        self.assertEqual(list(lines["PyTorch seed 2"].get_ydata()), [0.30, 0.52, 0.70])
        self.assertEqual(lines["PyTorch seed 2"].get_linestyle(), ":")
        losses = {line.get_label(): line for line in loss.get_lines()}
        self.assertEqual(list(losses["PyTorch seed 1 train"].get_ydata()), [3.0, 2.0, 1.5])

    def test_out_dir_report(self):
        args = [a for ref in self.references for a in ("--reference", ref)]
        self.assert_ok(run_report(*self.runs, *args, "--out", self.path("out")))
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("## Learning against the reference", text)
        self.assertIn("the learning references dotted", text)
        self.assertTrue(os.path.getsize(self.path("out", "curves.svg")) > 0)


class LearningReferenceErrorTest(TempDirTest):
    def assert_refused(self, reference, *fragments):
        run = learning_run(self.path("sb.h5"), 1, [0.5])
        result = run_report(run, "--reference", reference, "--out", self.path("out"))
        self.assertEqual(result.returncode, 2, result.stderr)
        message = result.stderr.strip()
        self.assertEqual(len(message.splitlines()), 1, message)
        self.assertTrue(message.startswith(f"report.py: error: {reference}: "), message)
        for fragment in fragments:
            self.assertIn(fragment, message)
        self.assertFalse(os.path.exists(self.path("out")))

    def test_neither_kind(self):
        path = self.path("other.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"label": "x", "model": "resnet18", "test_accuracy": 0.7}, handle)
        self.assert_refused(path, "is neither a throughput reference (a non-empty \"results\" list) nor a learning "
                                  "reference (\"mode\": \"learn\" with a \"history\" list).")

    def test_learning_json_without_history(self):
        path = learning_json(self.path("empty.json"), 1, [0.5], history=[])
        self.assert_refused(path, "needs a non-empty \"history\" list")

    def test_accuracy_in_percent(self):
        path = learning_json(self.path("percent.json"), 1, [50.0])
        self.assert_refused(path, "the test_accuracy of epoch 1 is 50.0", "0.73, not 73")


class ThroughputReferenceTest(TempDirTest):
    def test_throughput_reference_still_works(self):
        runs = [fixtures.write_run(self.path(f"mlp-np{n}.h5"), n, [epoch(1, 1.0, 1000.0 * n)]) for n in (1, 2)]
        reference = self.path("pytorch.json")
        with open(reference, "w", encoding="utf-8") as handle:
            json.dump({"label": "PyTorch DDP", "results": [{"gpus": 1, "images_per_s": 900.0},
                                                           {"gpus": 2, "images_per_s": 1700.0}]}, handle)
        self.assert_ok(run_report(*runs, "--reference", reference, "--out", self.path("out")))
        rows = [r for r in read_csv(self.path("out", "scaling.csv")) if r["series"] == "PyTorch DDP"]
        self.assertEqual([float(r["images_per_s"]) for r in rows], [900.0, 1700.0])
        with open(self.path("out", "report.md"), encoding="utf-8") as handle:
            self.assertNotIn("Learning against the reference", handle.read())


if __name__ == "__main__":
    unittest.main()
