#!/usr/bin/env python3
"""Holds every #include of src/ and kernels/ to the floors of docs/architecture.md: a file may include
files of its own floor and of the floors below it, never of one above or beside it.

The floors are read from the page's tables whose first columns are `| <floor> | folder | <below> |`:
"Layers" (each library of src/ and kernels/, and the libraries it links) and "The parts of sb_train"
(the floors inside sb_train). A folder cell names its folders in backticks (`src/*/cuda` matches any
folder of src/); a file belongs to the floor whose folder matches its own most closely. The third cell
names the floors right below (by their names without `sb_`); anything else there (MPI, zlib) is a
library from outside.
Run from anywhere: python3 tests/repo/test_include_floors.py [REPO_ROOT]."""
import fnmatch
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
ARCHITECTURE = "docs/architecture.md"
CHECKED_FOLDERS = ("src/", "kernels/")
SOURCE_SUFFIXES = (".h", ".cuh", ".cpp", ".cu")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


class Floors:
    """One table of floors: each floor's folders and the floors right below it."""

    def __init__(self, rows):
        self.folders = {}  # floor name -> folder patterns, each a list of path components
        below = {}
        for name, folder_cell, below_cell in rows:
            patterns = [p.rstrip("/") for p in re.findall(r"`([^`]+)`", folder_cell) if p.startswith(CHECKED_FOLDERS)]
            self.folders[name] = [p.split("/") for p in patterns]
            below[name] = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", below_cell)
        self.below = {name: {b for b in words if b in self.folders} for name, words in below.items()}

    def floor_of(self, path):
        """The floor whose folder matches `path`'s folder most closely (deepest, then most literal), or None."""
        folder = path.split("/")[:-1]
        best, best_score = None, None
        for name, patterns in self.folders.items():
            for pattern in patterns:
                if len(pattern) > len(folder):
                    continue
                if all(fnmatch.fnmatchcase(part, want) for part, want in zip(folder, pattern)):
                    score = (len(pattern), sum("*" not in p for p in pattern))
                    if best_score is None or score > best_score:
                        best, best_score = name, score
        return best

    def reachable(self, name):
        """`name` and every floor below it."""
        seen, todo = set(), [name]
        while todo:
            floor = todo.pop()
            if floor not in seen:
                seen.add(floor)
                todo.extend(self.below.get(floor, ()))
        return seen


def floor_tables(text):
    """Each markdown table whose second header cell is `folder`, as Floors."""
    tables, rows, header = [], None, None
    for line in text.splitlines() + [""]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            if rows:
                tables.append(Floors(rows))
            rows, header = None, None
        elif header is None:
            header = cells
            rows = [] if len(cells) >= 3 and cells[1] == "folder" else None
        elif rows is not None and not set(line) <= set("|-: "):
            rows.append((cells[0].strip("`").removeprefix("sb_"), cells[1], cells[2]))
    return tables


def tracked_sources():
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", *CHECKED_FOLDERS],
                            capture_output=True, check=True).stdout
    return [n for n in listed.decode().split("\0") if n.endswith(SOURCE_SUFFIXES)]


def resolve(including, included, present):
    """The repository path an include names: from src/ or the root (kernels/), else beside the includer."""
    for candidate in ("src/" + included, included, os.path.normpath(os.path.join(os.path.dirname(including), included))):
        if candidate in present:
            return candidate
    return None


def upward_includes(tables, sources, read):
    """'file:line: includes X (floor a may use only b, c)' for each include that leaves the floors below."""
    layers, parts = tables[0], tables[1:]
    present = set(sources)
    found = []
    for name in sources:
        text = read(name)
        for match in INCLUDE.finditer(text):
            target = resolve(name, match.group(1), present)
            if target is None:
                continue
            for floors in [layers] + [t for t in parts if layers.floor_of(name) == layers.floor_of(target)]:
                mine, theirs = floors.floor_of(name), floors.floor_of(target)
                if mine is None or theirs is None or theirs in floors.reachable(mine):
                    continue
                line = text.count("\n", 0, match.start()) + 1
                allowed = ", ".join(sorted(floors.reachable(mine)))
                found.append(f"{name}:{line}: includes {target} ({theirs}), but {mine} may use only {allowed}")
    return found


def read_tracked(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


class IncludeFloorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tables = floor_tables(read_tracked(ARCHITECTURE))
        cls.sources = tracked_sources()

    def test_the_page_has_the_layers_and_the_parts_of_train(self):
        self.assertGreaterEqual(len(self.tables), 2, f"{ARCHITECTURE} lost its tables of floors")
        layers = self.tables[0]
        for floor in ("core", "maths", "data", "optim", "train", "kernels", "nn_cuda", "cuda", "scalebench"):
            self.assertIn(floor, layers.folders, f"{ARCHITECTURE}'s Layers table has no row {floor}")

    def test_every_source_has_a_floor(self):
        layers = self.tables[0]
        homeless = [n for n in self.sources if layers.floor_of(n) is None]
        self.assertEqual(homeless, [], f"files in no folder of {ARCHITECTURE}'s Layers table; add their folder "
                         "to the library that builds them:\n" + "\n".join(homeless))

    def test_includes_run_down_only(self):
        found = upward_includes(self.tables, self.sources, read_tracked)
        self.assertEqual(found, [], "includes that run up or across the floors of " + ARCHITECTURE + ":\n" + "\n".join(found))

    def test_the_check_catches_what_it_looks_for(self):
        page = """
| library | folder | links | what |
|---|---|---|---|
| `sb_core` | `src/core` | MPI | base |
| `sb_maths` | `src/maths` | core | shared |
| `sb_data` | `src/data` | maths, zlib | data |
| `sb_train` | `src/train` and its parts but their `cuda/` folders | data | training |
| `sb_kernels` | `kernels/` | core, maths, CUDA | kernels |
| `sb_cuda` | `src/train/engines/cuda`, any other `src/*/cuda` | train, kernels | engines |

| part | folder | uses |
|---|---|---|
| configuration | `src/train` | |
| engines | `src/train/engines` | configuration |
"""
        files = {
            "src/core/a.h": "",
            "src/maths/m.h": '#include "core/a.h"\n',
            "src/data/d.h": '#include "maths/m.h"\n#include "core/a.h"\n',
            "src/data/cuda/g.h": '#include "kernels/k.h"\n#include "train/c.h"\n',
            "src/train/c.h": '#include "data/d.h"\n#include "train/engines/e.h"\n',
            "src/train/engines/e.h": '#include "train/c.h"\n',
            "kernels/k.h": '#include "maths/m.h"\n#include "data/d.h"\n',
        }
        tables = floor_tables(page)
        self.assertEqual(tables[0].floor_of("src/data/cuda/g.h"), "cuda")
        self.assertEqual(tables[0].floor_of("src/train/engines/cuda/x.h"), "cuda")
        self.assertEqual(tables[1].floor_of("src/train/engines/dp/x.h"), "engines")
        found = upward_includes(tables, sorted(files), files.get)
        self.assertEqual([f.split(" (")[0] for f in found],
                         ["kernels/k.h:2: includes src/data/d.h", "src/train/c.h:2: includes src/train/engines/e.h"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
