"""An image folder listed as scalebench lists it (src/data/image/image_folder.h), without PyTorch: train/'s
class folders sorted by name and numbered from 0, val/ numbered by train/'s names, each class's image files
walked recursively and sorted by (folder, name); hidden folders and files (a leading dot) left out. A bad
layout raises ValueError with one sentence, before anything reads an image."""
import os

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")  # torchvision's
LAYOUT = "the layout is DIR/train/CLASS/IMAGE and DIR/val/CLASS/IMAGE (scripts/make_image_data.py writes one)"


def is_hidden(name):
    return name.startswith(".")


def class_names(split):
    try:
        names = sorted(e.name for e in os.scandir(split) if e.is_dir() and not is_hidden(e.name))
    except OSError as e:
        raise ValueError(f"cannot read '{split}': {e.strerror}") from None
    if not names:
        raise ValueError(f"'{split}' holds no class folders; {LAYOUT}")
    return names


def class_images(folder):
    found = []
    for parent, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = [d for d in dirs if not is_hidden(d)]
        found += [(parent, name) for name in files
                  if not is_hidden(name) and name.lower().endswith(IMAGE_EXTENSIONS)]
    if not found:
        raise ValueError(f"class folder '{folder}' holds no images (files ending {' '.join(IMAGE_EXTENSIONS)})")
    return [os.path.join(parent, name) for parent, name in sorted(found)]


def list_image_folder(root):
    """(classes, train, val): the class names, and (path, label) of every train and val image."""
    if not os.path.isdir(root):
        raise ValueError(f"'{root}' does not exist or is not a folder; {LAYOUT}")
    for split in ("train", "val"):
        if not os.path.isdir(os.path.join(root, split)):
            raise ValueError(f"'{root}' has no {split}/ folder; {LAYOUT}")
    classes = class_names(os.path.join(root, "train"))
    label_of = {name: label for label, name in enumerate(classes)}
    splits = {}
    for split in ("train", "val"):
        samples = []
        for name in class_names(os.path.join(root, split)):
            if name not in label_of:
                raise ValueError(f"class folder '{os.path.join(root, split, name)}' has no counterpart in train/; "
                                 "every class of val/ must be one of train/'s (their numbers come from train/)")
            samples += [(path, label_of[name]) for path in class_images(os.path.join(root, split, name))]
        splits[split] = samples
    return classes, splits["train"], splits["val"]
