"""A Dockerfile's instructions, parsed, and a syntax check of them (Debian 12 packages no Dockerfile
linter such as hadolint). check() reports: instructions Docker does not know, anything but ARG before
the first FROM, a malformed FROM, stage names used twice, COPY --from= naming no earlier stage, a
${VAR} in FROM that no ARG before the first FROM declares, JSON-form CMD/ENTRYPOINT/RUN/SHELL that is
not a JSON list of strings, ENV/LABEL/ARG without a name, and COPY/ADD sources missing from the
build context."""
import glob
import json
import os
import re
import shlex

INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY",
                "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL",
                "HEALTHCHECK", "SHELL"}
FROM = re.compile(r"^(?:--platform=\S+\s+)?(?P<image>\S+)(?:\s+AS\s+(?P<name>[a-z][a-z0-9_.-]*))?$",
                  re.IGNORECASE)
VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)")


class Instruction:
    def __init__(self, line, keyword, args):
        self.line, self.keyword, self.args = line, keyword, args

    def flags_and_words(self):
        """(--flag=value options, remaining shell words) of COPY/ADD-like arguments."""
        words = shlex.split(self.args)
        flags = {}
        while words and words[0].startswith("--"):
            name, _, value = words.pop(0)[2:].partition("=")
            flags[name] = value
        return flags, words


def parse(text):
    """The instructions of a Dockerfile: comments and blank lines dropped, `\\` continuations joined."""
    out, buf, start = [], "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("#") or (not buf and not stripped):
            continue  # a comment inside a continued instruction is dropped too, as Docker does
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        keyword, _, args = (buf + line).strip().partition(" ")
        out.append(Instruction(start, keyword.upper(), args.strip()))
        buf = ""
    if buf:
        keyword, _, args = buf.strip().partition(" ")
        out.append(Instruction(start, keyword.upper(), args.strip()))
    return out


def stages(instructions):
    """[(FROM instruction, stage name or None, instructions of the stage)]."""
    out = []
    for ins in instructions:
        if ins.keyword == "FROM":
            m = FROM.match(ins.args)
            out.append((ins, m.group("name") if m else None, []))
        elif out:
            out[-1][2].append(ins)
    return out


def global_args(instructions):
    """{name: default} of the ARGs before the first FROM."""
    out = {}
    for ins in instructions:
        if ins.keyword == "FROM":
            break
        if ins.keyword == "ARG":
            name, _, default = ins.args.partition("=")
            out[name.strip()] = shlex.split(default)[0] if default.strip() else ""
    return out


def substitute(text, variables):
    return re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)",
                  lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)


def _json_list(args):
    try:
        value = json.loads(args)
    except ValueError:
        return False
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def check(text, context_dir):
    errors = []
    instructions = parse(text)
    if not instructions:
        return ["no instructions"]
    seen_from = False
    declared = global_args(instructions)
    names, earlier, stage_count = [], [], 0
    for ins in instructions:
        where = f"line {ins.line}"
        if ins.keyword not in INSTRUCTIONS:
            errors.append(f"{where}: unknown instruction {ins.keyword}")
            continue
        if not seen_from and ins.keyword not in ("ARG", "FROM"):
            errors.append(f"{where}: {ins.keyword} before the first FROM (only ARG may come first)")
        if ins.keyword == "FROM":
            seen_from = True
            stage_count += 1
            earlier = list(names)
            m = FROM.match(ins.args)
            if not m:
                errors.append(f"{where}: FROM takes [--platform=P] IMAGE [AS NAME], got '{ins.args}'")
                continue
            for var in VARIABLE.findall(m.group("image")):
                if var not in declared:
                    errors.append(f"{where}: FROM uses ${{{var}}}, which no ARG before the first FROM declares")
            if m.group("name"):
                if m.group("name") in names:
                    errors.append(f"{where}: stage name '{m.group('name')}' is used twice")
                names.append(m.group("name"))
        elif ins.keyword in ("CMD", "ENTRYPOINT", "RUN", "SHELL") and ins.args.startswith("["):
            if not _json_list(ins.args):
                errors.append(f"{where}: {ins.keyword} in JSON form must be a list of strings")
        elif ins.keyword in ("ENV", "LABEL", "ARG") and not re.match(r"[A-Za-z_][\w.-]*", ins.args):
            errors.append(f"{where}: {ins.keyword} needs a NAME")
        elif ins.keyword in ("COPY", "ADD"):
            errors += _check_copy(ins, earlier, stage_count - 1, context_dir)
        if not ins.args and ins.keyword != "FROM":
            errors.append(f"{where}: {ins.keyword} without arguments")
    if not seen_from:
        errors.append("no FROM")
    return errors


def _check_copy(ins, earlier_stages, stage_index, context_dir):
    where = f"line {ins.line}"
    try:
        flags, words = ins.flags_and_words()
    except ValueError as e:
        return [f"{where}: {ins.keyword}: {e}"]
    if len(words) < 2:
        return [f"{where}: {ins.keyword} needs at least one source and a destination"]
    source = flags.get("from")
    if source is not None:
        if source.isdigit() and int(source) < stage_index:
            return []
        if source in earlier_stages or "/" in source or ":" in source:
            return []  # an earlier stage, or an image
        return [f"{where}: {ins.keyword} --from={source} names no earlier stage "
                f"(stages: {', '.join(earlier_stages) or 'none named'})"]
    missing = [s for s in words[:-1] if not s.startswith(("http://", "https://"))
               and not glob.glob(os.path.join(context_dir, s))]
    return [f"{where}: {ins.keyword} source '{s}' is not in the build context" for s in missing]
