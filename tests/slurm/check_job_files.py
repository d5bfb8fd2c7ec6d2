#!/usr/bin/env python3
"""Static checks of the job files that no Debian 12 package can run: HTCondor submit files (.sub) and
Apptainer definitions (.def).

  check_job_files.py SOURCE_DIR [--extract DIR]

Submit files: `key = value` commands (with `\\` continuations, comments, if/else/endif), known
commands or user macros, every $(macro) defined and every user macro used, quoted `arguments` and
`environment` in the new syntax, an existing executable (paths are relative to SOURCE_DIR, the folder
users submit from), and a valid final `queue` statement.
Definitions: a `Bootstrap:` header with the keys its agent needs, known sections, each once, %files
sources that exist in SOURCE_DIR. --extract writes the shell sections (%post, %environment,
%runscript, %test) to DIR as sh scripts, for shellcheck.
Exit code 0 when every file passes, 1 otherwise."""
import argparse
import os
import re
import sys
from pathlib import Path

# Submit commands this project may use (condor_submit's manual has more; add them as they are needed).
SUBMIT_COMMANDS = {
    "universe", "executable", "arguments", "environment", "getenv", "input", "output", "error", "log",
    "log_xml", "initialdir", "request_cpus", "request_gpus", "request_memory", "request_disk",
    "require_gpus", "gpus_minimum_capability", "gpus_minimum_memory", "requirements", "rank",
    "should_transfer_files", "when_to_transfer_output", "transfer_input_files",
    "transfer_output_files", "transfer_output_remaps", "transfer_executable", "stream_output",
    "stream_error", "notification", "notify_user", "batch_name", "job_batch_name", "max_retries",
    "retry_until", "success_exit_code", "periodic_hold", "periodic_release", "periodic_remove",
    "on_exit_hold", "on_exit_remove", "max_idle", "max_materialize", "accounting_group",
    "accounting_group_user", "priority", "nice_user", "container_image", "container_target_dir",
    "docker_image", "docker_network_type", "want_graceful_removal", "allowed_execute_duration",
    "allowed_job_duration", "machine_count", "concurrency_limits", "hold", "leave_in_queue",
}
UNIVERSES = {"vanilla", "container", "docker", "parallel", "local", "scheduler", "java", "vm", "grid"}
ENUMS = {
    "should_transfer_files": {"yes", "no", "if_needed"},
    "when_to_transfer_output": {"on_exit", "on_exit_or_evict", "on_success"},
    "getenv": {"true", "false"},
    "notification": {"always", "complete", "error", "never"},
}
# Macros condor_submit defines itself.
BUILTIN_MACROS = {"cluster", "clusterid", "process", "procid", "node", "step", "item", "itemindex",
                  "row", "jobid", "submitunixtime", "requestcpus", "requestmemory", "requestdisk",
                  "requestgpus", "arch", "opsys", "opsysandver", "opsysmajorver", "filesystemdomain",
                  "hostname", "ipaddress", "tilde", "ruler"}
# $(name), $(name:default) and the macro functions ($INT(name), $Fn(name), ...); $ENV(X) names an
# environment variable, not a macro.
MACRO_REF = re.compile(r"\$(ENV|INT|REAL|RANDOM_CHOICE|RANDOM_INTEGER|CHOICE|F[a-zA-Z]*|SUBSTR)?\(([^()]*)\)")
QUEUE = re.compile(r"^queue(?:\s+(?P<count>\d+))?"
                   r"(?:\s+(?P<vars>[A-Za-z_][\w]*(?:\s*,\s*[A-Za-z_]\w*)*)\s+(?P<kind>in|from|matching)"
                   r"(?:\s+\[[^\]]*\])?\s+(?P<items>.+))?$", re.IGNORECASE)
KEY = re.compile(r"^(?P<key>\+?[A-Za-z_][\w.]*)\s*=\s*(?P<value>.*)$")


def logical_lines(text):
    """(line number, text) of each logical line: comments and blanks dropped, `\\` continuations joined."""
    out, buf, start = [], "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append((start, (buf + line).strip()))
        buf = ""
    if buf:
        out.append((start, buf.strip()))
    return out


def check_quoted(name, value, errors, where):
    """New-syntax arguments/environment: one double-quoted string, balanced single quotes inside."""
    if not (len(value) >= 2 and value[0] == '"' and value[-1] == '"'):
        errors.append(f"{where}: {name} should use the new syntax, one double-quoted string")
        return
    inner = value[1:-1].replace('""', "")
    if '"' in inner:
        errors.append(f"{where}: {name} has an unescaped double quote (write \"\")")
    if inner.replace("''", "").count("'") % 2:
        errors.append(f"{where}: {name} has unbalanced single quotes")
    if name == "environment":
        for item in re.findall(r"(?:[^\s']|'[^']*')+", inner):
            if not re.match(r"^[A-Za-z_]\w*=", item):
                errors.append(f"{where}: environment entry '{item}' is not NAME=value")


def check_submit(path, base):
    errors, defined, used = [], {}, set()
    lines = logical_lines(path.read_text())
    queue_vars, queue_line, depth = set(), None, 0
    for n, line in lines:
        where = f"{path}:{n}"
        low = line.lower()
        if queue_line is not None:
            errors.append(f"{where}: commands after the queue statement (line {queue_line}) start another cluster")
        if re.match(r"^(if|elif)\b", low):
            depth += low.startswith("if")
            used.update(m.lower() for m in re.findall(r"defined\s+(\w+)", line))
            continue
        if low in ("else", "endif"):
            depth -= low == "endif"
            continue
        if low.startswith("include"):
            continue
        if re.match(r"^queue\b", low):
            m = QUEUE.match(line)
            if not m:
                errors.append(f"{where}: malformed queue statement: {line}")
            else:
                if m.group("vars"):
                    queue_vars = {v.strip().lower() for v in m.group("vars").split(",")}
                    items = m.group("items").strip()
                    if m.group("kind").lower() == "in" and items.startswith("(") and not items.endswith(")"):
                        errors.append(f"{where}: queue item list opened with '(' but not closed")
            queue_line = n
            continue
        m = KEY.match(line)
        if not m:
            errors.append(f"{where}: not a 'key = value' command: {line}")
            continue
        key, value = m.group("key"), m.group("value").strip()
        lkey = key.lower()
        defined.setdefault(lkey, n)
        used.update(ref.split(":")[0].split(",")[0].strip().lower()
                    for fn, ref in MACRO_REF.findall(value) if fn != "ENV")
        if key.startswith("+") or lkey.startswith("my."):
            continue
        if lkey in ENUMS and value.lower() not in ENUMS[lkey] and "$(" not in value:
            errors.append(f"{where}: {key} = {value}: expected one of {sorted(ENUMS[lkey])}")
        if lkey == "universe" and value.lower() not in UNIVERSES:
            errors.append(f"{where}: unknown universe '{value}'")
        if lkey in ("arguments", "environment"):
            check_quoted(lkey, value, errors, where)
        if lkey == "executable":
            exe = base / value
            if "$(" not in value and not (exe.is_file() and os.access(exe, os.X_OK)):
                errors.append(f"{where}: executable {value} is not an executable file under {base}")
    if depth:
        errors.append(f"{path}: if without endif")
    if queue_line is None:
        errors.append(f"{path}: no queue statement")
    if "executable" not in defined:
        errors.append(f"{path}: no executable")
    user_macros = {k for k in defined if k not in SUBMIT_COMMANDS and not k.startswith(("+", "my."))}
    for name in sorted(used - set(defined) - BUILTIN_MACROS - queue_vars):
        errors.append(f"{path}: $({name}) is used but never defined")
    for name in sorted(user_macros - used):
        errors.append(f"{path}:{defined[name]}: '{name}' is neither a submit command this checker knows "
                      f"nor a macro used anywhere (a typo?)")
    return errors


AGENT_KEYS = {"docker": {"from"}, "library": {"from"}, "oras": {"from"}, "shub": {"from"},
              "localimage": {"from"}, "debootstrap": {"osversion", "mirrorurl"}, "yum": {"osversion", "mirrorurl"},
              "dnf": {"osversion", "mirrorurl"}, "zypper": {"osversion", "mirrorurl"}, "busybox": {"mirrorurl"},
              "scratch": set(), "docker-daemon": {"from"}, "docker-archive": {"from"}}
SECTIONS = {"setup", "files", "environment", "post", "runscript", "startscript", "test", "labels", "help",
            "arguments"}
SHELL_SECTIONS = ("post", "environment", "runscript", "startscript", "test", "setup")


def check_def(path, base, extract):
    errors, header, sections, current = [], {}, {}, None
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        m = re.match(r"^%(\w+)(?:\s+(\S+))?\s*$", raw)
        if m:
            name = m.group(1).lower()
            if not (name in SECTIONS or name.startswith("app")):
                errors.append(f"{path}:{n}: unknown section %{name}")
            key = name if not name.startswith("app") else f"{name} {m.group(2)}"
            if key in sections:
                errors.append(f"{path}:{n}: section %{key} appears twice")
            sections[key], current = [], key
            continue
        if current is None:
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            hm = re.match(r"^(\w+)\s*:\s*(\S.*)$", raw)
            if not hm:
                errors.append(f"{path}:{n}: header lines are 'Key: value': {raw}")
            else:
                header[hm.group(1).lower()] = hm.group(2).strip()
            continue
        sections[current].append(raw)
    agent = header.get("bootstrap", "").lower()
    if not agent:
        errors.append(f"{path}: no Bootstrap: header")
    elif agent not in AGENT_KEYS:
        errors.append(f"{path}: unknown bootstrap agent '{agent}'")
    else:
        for key in AGENT_KEYS[agent] - set(header):
            errors.append(f"{path}: Bootstrap {agent} needs a '{key.capitalize()}:' line")
    if agent == "docker" and not re.match(r"^[\w.\-/:]+(@sha256:[0-9a-f]{64})?$", header.get("from", "")):
        errors.append(f"{path}: From: '{header.get('from')}' is not an image reference")
    for raw in sections.get("files", []):
        parts = raw.split()
        if not parts or parts[0].startswith("#"):
            continue
        if not (base / parts[0]).exists():
            errors.append(f"{path}: %files source {parts[0]} does not exist in {base}")
    if "runscript" not in sections:
        errors.append(f"{path}: no %runscript")
    if extract:
        extract.mkdir(parents=True, exist_ok=True)
        for name in SHELL_SECTIONS:
            if name in sections:
                body = "\n".join(sections[name])
                (extract / f"{path.stem}.{name}.sh").write_text(f"#!/bin/sh\n# %{name} of {path}\n{body}\n")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source_dir", type=Path)
    ap.add_argument("--extract", type=Path, help="write the shell sections of .def files here")
    args = ap.parse_args()
    base = args.source_dir.resolve()
    subs = sorted((base / "jobs").rglob("*.sub"))
    defs = sorted((base / "jobs").rglob("*.def"))
    if not subs or not defs:
        print(f"expected .sub and .def files under {base}/jobs, found {len(subs)} and {len(defs)}")
        return 1
    errors = []
    for p in subs:
        errors += check_submit(p, base)
    for p in defs:
        errors += check_def(p, base, args.extract)
    for e in errors:
        print(e)
    print(f"checked {len(subs)} submit file(s), {len(defs)} definition(s): "
          f"{'ok' if not errors else f'{len(errors)} problem(s)'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
