"""Reading a learning reference: the test accuracy per epoch of another implementation trained on the same
data, e.g. the JSON of `bench/pytorch_reference.py --learn` (bench/torch_learning.py for the wrn,
bench/torch_image_learning.py for an image folder). analysis/README.md documents the keys.

    {"mode": "learn", "label": "PyTorch 2.11.0 resnet18 ...", "model": "resnet18", "seed": 1, "epochs": 8,
     "history": [{"epoch": 1, "test_accuracy": 0.33, "train_loss": 3.2, "seconds": 31.8}, ...]}
"""
import math
from dataclasses import dataclass, field
from pathlib import Path

from result_error import ResultError

# The recipe's values a learning JSON records beside the history; compared with the runs' config_json.
SETTING_KEYS = ("batch_size", "lr", "momentum", "weight_decay", "scheduler", "precision")


@dataclass
class LearningReference:
    path: str
    label: str            # the JSON's "label" (default: the file name without extension)
    name: str             # the implementation's short name for legends: the label's first word ("PyTorch")
    model: str
    epochs: int           # the epochs the run was set to train (its schedule depends on them)
    seed: int = None
    data: str = ""
    settings: dict = field(default_factory=dict)    # SETTING_KEYS the JSON has
    accuracy: dict = field(default_factory=dict)    # epoch -> test accuracy (a fraction)
    train_loss: dict = field(default_factory=dict)  # epoch -> mean train loss, where the JSON has it
    device: str = ""
    version: str = ""     # e.g. "torch 2.11.0+cu130"

    @property
    def run_label(self):
        """"PyTorch seed 1": how the reference's curve and column are named."""
        return f"{self.name} seed {self.seed}" if self.seed is not None else f"{self.name} {Path(self.path).stem}"


def is_learning_document(document):
    return isinstance(document, dict) and document.get("mode") == "learn"


def _fraction(value, path, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ResultError(f"{path}: {what} is {value!r}, not a number.")
    return float(value)


def _history(document, path):
    history = document.get("history")
    if not isinstance(history, list) or not history:
        raise ResultError(f"{path}: a learning reference (\"mode\": \"learn\") needs a non-empty \"history\" list, "
                          "one entry per epoch.")
    accuracy, train_loss = {}, {}
    for index, entry in enumerate(history):
        where = f"history entry {index + 1}"
        if not isinstance(entry, dict) or "epoch" not in entry or "test_accuracy" not in entry:
            raise ResultError(f"{path}: {where} needs the keys \"epoch\" and \"test_accuracy\".")
        epoch = entry["epoch"]
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ResultError(f"{path}: the epoch of {where} must be a whole number from 1, not {epoch!r}.")
        if epoch in accuracy:
            raise ResultError(f"{path}: epoch {epoch} appears twice in the history.")
        value = _fraction(entry["test_accuracy"], path, f"the test_accuracy of epoch {epoch}")
        if not 0.0 <= value <= 1.0:
            raise ResultError(f"{path}: the test_accuracy of epoch {epoch} is {value!r}; a fraction from 0 to 1 is "
                              "expected (0.73, not 73).")
        accuracy[epoch] = value
        if entry.get("train_loss") is not None:
            train_loss[epoch] = _fraction(entry["train_loss"], path, f"the train_loss of epoch {epoch}")
    return accuracy, train_loss


def learning_reference(document, path):
    """The LearningReference of a parsed JSON document whose "mode" is "learn"; raises ResultError (one
    sentence naming the file) for a malformed one."""
    model = document.get("model")
    if not isinstance(model, str) or not model:
        raise ResultError(f"{path}: a learning reference needs its \"model\" (e.g. \"resnet18\"), to be compared "
                          "with scalebench runs of the same model.")
    accuracy, train_loss = _history(document, path)
    epochs = document.get("epochs", max(accuracy))
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ResultError(f"{path}: \"epochs\" must be a whole number from 1, not {epochs!r}.")
    seed = document.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ResultError(f"{path}: \"seed\" must be a whole number, not {seed!r}.")
    label = str(document.get("label") or Path(path).stem)
    torch_version = document.get("torch_version")
    return LearningReference(path=path, label=label, name=label.split()[0], model=model, epochs=epochs, seed=seed,
                             data=str(document.get("data") or ""),
                             settings={key: document[key] for key in SETTING_KEYS if document.get(key) is not None},
                             accuracy=accuracy, train_loss=train_loss, device=str(document.get("device") or ""),
                             version=f"torch {torch_version}" if torch_version else "")
