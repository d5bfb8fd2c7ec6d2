#!/usr/bin/env python3
"""Checks on the tracked tree that a reader relies on:
- every repository path that a doc, comment or script cites exists (a build product counts when its
  source does, e.g. tests/reference/dump_initial_weights from dump_initial_weights.cpp);
- the text speaks of the product: no development-history words in docs/, scripts/, results/, tests/, src/;
- no results folder is named after a run's nickname instead of its machine and date, and each is listed in
  results/README.md, which says what it holds.
Run from anywhere: python3 tests/repo/test_repository.py [REPO_ROOT]."""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
# results/ is left out: paths there are mostly examples of output files a command will write.
TOP_FOLDERS = ("src", "kernels", "tests", "docs", "bench", "scripts", "jobs", "analysis", "cmake", ".ci")
# A path starts at a top folder, is not part of a longer word or path, and is not a shell variable's
# tail ($src/jobs/...).
# A path followed by a pattern character (tests/gpu/test_layers_*.cpp, foo.{h,cpp}, DIR/<name>) is a
# pattern, not a citation of one file.
CITED_PATH = re.compile(r"(?<![\w./$}-])((?:%s)/[\w./-]*\w)(?![\w*<{$])" % "|".join(re.escape(t) for t in TOP_FOLDERS))
BINARY_SUFFIXES = (".h5", ".png", ".gz", ".tgz", ".xz", ".so", ".pdf")
SOURCE_SUFFIXES = (".cpp", ".cu", ".py", ".sh")
SELF_TESTS = ("tests/repo/test_repository.py", "tests/repo/test_include_floors.py")


def tracked_text_files():
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in listed.decode().split("\0"):
        # These files name missing paths on purpose, to test the checks.
        if not name or name.endswith(BINARY_SUFFIXES) or name in SELF_TESTS:
            continue
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                yield name, f.read()
        except UnicodeDecodeError:
            continue


def exists(cited):
    path = os.path.join(ROOT, cited)
    if os.path.exists(path) or any(os.path.exists(path + s) for s in SOURCE_SUFFIXES):
        return True
    # foo.{h,cpp} and foo.* style: the stem names a file.
    stem = re.sub(r"\.[\w{},*]*$", "", path)
    folder = os.path.dirname(stem)
    base = os.path.basename(stem)
    return os.path.isdir(folder) and any(n.startswith(base + ".") for n in os.listdir(folder))


class RepositoryTest(unittest.TestCase):
    def test_cited_paths_exist(self):
        missing = []
        for name, text in tracked_text_files():
            for match in CITED_PATH.finditer(text):
                cited = match.group(1).rstrip(".")
                if not exists(cited):
                    line = text.count("\n", 0, match.start()) + 1
                    missing.append(f"{name}:{line}: {cited}")
        self.assertEqual(missing, [], "cited paths that do not exist:\n" + "\n".join(missing))

    def test_text_speaks_of_the_product(self):
        words = re.compile(r"session [a-c]\b|issue #[0-9]|the " + "brief", re.IGNORECASE)
        found = []
        for name, text in tracked_text_files():
            if not name.startswith(("docs/", "scripts/", "results/", "tests/", "src/")):
                continue
            for match in words.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{name}:{line}: {match.group(0)}")
        self.assertEqual(found, [], "development-history words:\n" + "\n".join(found))

    def test_results_folders_are_named_by_machine(self):
        folders = [d for d in os.listdir(os.path.join(ROOT, "results")) if os.path.isdir(os.path.join(ROOT, "results", d))]
        nicknamed = [d for d in folders if re.fullmatch(r"c[0-9]+(-.*)?", d)]
        self.assertEqual(nicknamed, [], "results folders named after a run, not a machine and date")

    def test_results_folders_are_listed(self):
        tracked = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "results"], capture_output=True,
                                 check=True).stdout.decode().split("\0")
        folders = sorted({name.split("/")[1] for name in tracked if name.count("/") >= 2})
        with open(os.path.join(ROOT, "results", "README.md"), encoding="utf-8") as f:
            listed = set(re.findall(r"^\| `([\w.-]+)/` \|", f.read(), re.MULTILINE))
        self.assertEqual([d for d in folders if d not in listed], [], "results folders missing from results/README.md")

    def test_the_checks_catch_what_they_look_for(self):
        self.assertFalse(exists("docs/no-such-page.md"))
        self.assertTrue(exists("tests/reference/dump_initial_weights"))
        self.assertTrue(exists("src/nn/cuda/plan_cache.{h,cpp}") or exists("src/nn/cuda/context.{h,cpp}"))
        self.assertEqual(CITED_PATH.findall("see $src/jobs/x.sh and docs/a.md."), ["docs/a.md"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
