#!/usr/bin/env python3
"""No function in src/ or kernels/ runs over 60 lines, from the line of its name to its closing brace,
so that a function reads as its named steps. Comments and string literals are left out of the brace
matching. The exceptions are named below: tables of rows (one row a line reads best as one list), and
functions whose split is pending, each with its reason; an exception that no longer applies fails too,
so that the lists only shrink.
Run from anywhere: python3 tests/repo/test_function_length.py [REPO_ROOT]."""
import bisect
import os
import re
import sys
import unittest

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
FOLDERS = ("src", "kernels")
SUFFIXES = (".h", ".cpp", ".cu", ".cuh")
LIMIT = 60

# Tables of rows: (file, function) -> why the table stays one function.
TABLES = {
    ("src/train/train_options.cpp", "make_rows"): "the table of every option, one row each",
}
# Splits still to do: (file, function) -> what is pending.
PENDING = {}

IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
QUALIFIER_AT_END = re.compile(r"(?:\bconst|\bnoexcept|\boverride|\bfinal|\bmutable|\bvolatile|&)\s*\Z")


def without_trailing_qualifiers(flat):
    """A declaration's text up to its parameters' closing parenthesis: no trailing return type, no const,
    noexcept, override, ... after it."""
    if "->" in flat:
        flat = flat[:flat.rindex("->")]
    flat = flat.rstrip()
    while True:
        found = QUALIFIER_AT_END.search(flat)
        if not found:
            return flat
        flat = flat[:found.start()].rstrip()


def strip_comments_and_strings(text):
    """The text with comments, string and character literals and preprocessor lines blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            raw = re.search(r"(?:u8|[uUL])?R$", text[max(0, i - 3):i])
            if raw and not re.match(r"\w", text[i - len(raw.group(0)) - 1:i - len(raw.group(0))] or " "):
                delimiter = text[i + 1:text.find("(", i)]
                j = text.find(")" + delimiter + '"', i)
                j = n if j < 0 else j + len(delimiter) + 2
            else:
                j = i + 1
                while j < n and text[j] != '"' and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A digit separator (1'000'000) is no character literal.
            token = re.search(r"[\w.]*$", text[max(0, i - 40):i]).group(0)
            if token[:1].isdigit():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    continued = False
    for k, line in enumerate(lines):
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        if directive:
            lines[k] = ""
    return "\n".join(lines)


def matching_brace(code, at):
    depth = 0
    for j in range(at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def depth_zero(prefix):
    """The prefix with every parenthesised part emptied: '(...)' becomes '()'."""
    out, depth = [], 0
    for c in prefix:
        if c == "(":
            if depth == 0:
                out.append(c)
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
            if depth == 0:
                out.append(c)
        elif depth == 0:
            out.append(c)
    return "".join(out)


def kind_of_block(prefix):
    """'function', 'scope' (namespace, class, extern "C": functions lie inside) or 'other' (an initializer,
    an enum)."""
    flat = depth_zero(prefix)
    if without_trailing_qualifiers(flat).endswith(")") or in_constructor_initializers(prefix):
        return "function"
    if re.search(r"\benum\b", flat):
        return "other"
    if re.search(r"\b(namespace|class|struct|union)\b", flat) or re.fullmatch(r"\s*extern\s*", flat.replace('""', "")):
        return "scope"
    return "other"


def in_constructor_initializers(prefix):
    """Whether the prefix ends inside a constructor's member initializers: ') : a_(1), b_'."""
    return re.search(r"\)\s*(noexcept\s*)?:(?!:)", depth_zero(prefix)) is not None


# Parenthesised attributes before a function's name, blanked to find the name's parenthesis.
ATTRIBUTES = re.compile(r"__launch_bounds__\s*\([^()]*\)|__attribute__\s*\(\([^()]*\)\)|alignas\s*\([^()]*\)")


def without_attributes(prefix):
    return ATTRIBUTES.sub(lambda m: " " * len(m.group(0)), prefix)


def function_name(prefix):
    prefix = without_attributes(prefix)
    head = prefix[:prefix.index("(")] if "(" in prefix else prefix
    found = re.search(r"((?:[\w~]+\s*::\s*)*~?(?:operator\s*\S+?|[\w]+))\s*$", head)
    return re.sub(r"\s+", "", found.group(1)) if found else "?"


def functions(text):
    """(name, first line, last line) of each function defined at namespace or class scope in the text; a
    lambda or class inside a function is part of it."""
    code = strip_comments_and_strings(text)
    line_starts = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_of(offset):
        return bisect.bisect_right(line_starts, offset)

    found = []
    start = 0  # where the text before the next block begins

    def scan(begin, end):
        nonlocal start
        start = begin
        i = begin
        while i < end:
            c = code[i]
            if c in ";}":
                start = i + 1
            elif c == "{":
                prefix = code[start:i]
                j = i - 1
                while j >= 0 and code[j].isspace():
                    j -= 1
                before = code[j] if j >= 0 else ""
                if in_constructor_initializers(prefix) and (before.isalnum() or before in "_>"):
                    i = matching_brace(code, i) + 1  # a member initialized with braces: b_{2}
                    continue
                close = matching_brace(code, i)
                kind = kind_of_block(prefix)
                if kind == "function":
                    paren = without_attributes(prefix).find("(")
                    found.append((function_name(prefix), line_of(start + max(paren, 0)), line_of(close)))
                elif kind == "scope":
                    scan(i + 1, close)
                i = close
                start = close + 1
            i += 1

    scan(0, len(code))
    return found


def source_files():
    for folder in FOLDERS:
        for base, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    path = os.path.join(base, name)
                    yield os.path.relpath(path, ROOT), path


_long_functions = None


def long_functions():
    """{(file, function): (first line, length)} of every function over the limit."""
    global _long_functions
    if _long_functions is not None:
        return _long_functions
    out = {}
    for relative, path in source_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name, first, last in functions(text):
            length = last - first + 1
            if length > LIMIT:
                out[(relative, name)] = (first, length)
    _long_functions = out
    return out


class ScannerTest(unittest.TestCase):
    def lengths(self, text):
        return {name: last - first + 1 for name, first, last in functions(text)}

    def test_counts_a_function_from_its_name_to_its_closing_brace(self):
        body = "\n".join("  x += %d;" % k for k in range(61))
        self.assertEqual(self.lengths("namespace a {\nint f(int x) {\n%s\n  return x;\n}\n}\n" % body), {"f": 64})

    def test_comments_strings_and_directives_hold_no_braces(self):
        text = ('void f() {\n  // }\n  const char* s = "}{";\n  char c = \'}\';\n  /* } */\n'
                '  auto r = R"x(})x";\n#define X }\n  int n = 1\'000;\n}\nvoid g() {}\n')
        self.assertEqual(self.lengths(text), {"f": 9, "g": 1})

    def test_class_members_lambdas_and_initializers(self):
        text = ("struct S : Base {\n  int a{0};\n  S() : a_(1), b_{2} {\n    auto l = [] {\n    };\n  }\n"
                "  void m() const noexcept {}\n  auto t() -> int {\n  }\n};\n"
                "enum class E { a, b };\nconst int table[] = {1, 2};\nint S::q() {\n}\n")
        self.assertEqual(self.lengths(text), {"S": 4, "m": 1, "t": 2, "S::q": 2})


class FunctionLengthTest(unittest.TestCase):
    def test_no_function_runs_over_the_limit(self):
        too_long = [
            "%s:%d %s: %d lines (at most %d)" % (path, first, name, length, LIMIT)
            for (path, name), (first, length) in sorted(long_functions().items())
            if (path, name) not in TABLES and (path, name) not in PENDING
        ]
        self.assertEqual(too_long, [], "functions over %d lines; split them into named steps:\n  " % LIMIT + "\n  ".join(too_long))

    def test_every_exception_still_applies(self):
        found = long_functions()
        stale = ["%s %s (%s)" % (path, name, why) for (path, name), why in {**TABLES, **PENDING}.items() if (path, name) not in found]
        self.assertEqual(stale, [], "these are no longer over %d lines; take them off the lists:\n  " % LIMIT + "\n  ".join(stale))

    def test_pending_splits_are_visible(self):
        for (path, name), why in sorted(PENDING.items()):
            first, length = long_functions().get((path, name), (0, 0))
            print("pending: %s:%d %s, %d lines: %s" % (path, first, name, length, why), file=sys.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
