"""The build commands of README.md's cluster build and of the container recipes in jobs/container/
(the Dockerfile and the Apptainer definition), parsed into argument lists."""
import os
import re
import shlex

import dockerfile

BUILD_SCRIPT = "scripts/build.sh"


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def shell_commands(script):
    """Each simple command of a shell script as a word list: `\\` continuations joined, comments
    dropped, split at &&, || and ;. A command substitution $(...) counts as one word."""
    script = re.sub(r"\\\n", " ", script)
    commands = []
    for line in script.splitlines():
        line = re.sub(r"\$\([^()]*\)", "CMDSUBST", line)
        words = shlex.split(line, comments=True)
        current = []
        for w in words + ["&&"]:
            if w in ("&&", "||", ";"):
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(w.rstrip(";"))
    return commands


def readme_build_commands(root):
    """The commands of the first code block of README.md's "Building on a cluster" section."""
    text = read(os.path.join(root, "README.md"))
    section = text[text.index("## Building on a cluster"):]
    block = section.split("```")[1]
    return shell_commands(block)


def readme_cmake_variables(root):
    """The names in README.md's table of CMake variables (`| `NAME` or `NAME` | ... |`)."""
    text = read(os.path.join(root, "README.md"))
    table = text[text.index("| CMake variable |"):]
    table = table[:table.index("\n\n")]
    return set(re.findall(r"`([A-Za-z_]\w*)`", "\n".join(line.split("|")[1] for line in table.splitlines())))


def apptainer_sections(root):
    """{header key or %section: text} of jobs/container/scalebench.def."""
    sections, current = {}, None
    for line in read(os.path.join(root, "jobs", "container", "scalebench.def")).splitlines():
        if line.startswith("%"):
            current = line.split()[0]
            sections[current] = ""
        elif current:
            sections[current] += line + "\n"
        elif re.match(r"^\w+:", line):
            key, _, value = line.partition(":")
            sections[key] = value.strip()
    return sections


def apptainer_build_commands(root):
    return shell_commands(apptainer_sections(root)["%post"])


def apptainer_source_copies(root):
    """The %files sources that go into the image's source folder."""
    pairs = [line.split() for line in apptainer_sections(root)["%files"].splitlines() if line.strip()]
    return {src for src, dest in pairs if dest.startswith("/opt/scalebench/src/")}


def docker_instructions(root):
    return dockerfile.parse(read(os.path.join(root, "jobs", "container", "Dockerfile")))


def docker_stage(root, name):
    instructions = docker_instructions(root)
    for from_, stage_name, body in dockerfile.stages(instructions):
        if stage_name == name:
            return from_, body
    raise KeyError(f"no stage '{name}' in jobs/container/Dockerfile")


def docker_image(root, name):
    """The base image of stage `name`, with the ARGs before the first FROM at their defaults."""
    from_, _ = docker_stage(root, name)
    image = dockerfile.FROM.match(from_.args).group("image")
    return dockerfile.substitute(image, dockerfile.global_args(docker_instructions(root)))


def docker_build_commands(root):
    """The commands of the build stage's RUN instructions, its ARGs at their defaults."""
    _, body = docker_stage(root, "build")
    variables = {}
    commands = []
    for ins in body:
        if ins.keyword == "ARG":
            name, _, default = ins.args.partition("=")
            variables[name] = shlex.split(default)[0] if default else ""
        elif ins.keyword == "RUN":
            commands += shell_commands(dockerfile.substitute(ins.args, variables))
    return commands


def docker_source_copies(root):
    _, body = docker_stage(root, "build")
    sources = set()
    for ins in body:
        if ins.keyword == "COPY":
            flags, words = ins.flags_and_words()
            if "from" not in flags:
                sources |= {w.rstrip("/") for w in words[:-1]}
    return sources


def build_script_calls(commands):
    """The arguments of each call of scripts/build.sh among `commands`."""
    return [c[1:] for c in commands if c[0] == BUILD_SCRIPT or c[0].endswith("/" + BUILD_SCRIPT)]


def cmake_calls(commands):
    """Commands that run CMake's configure or build step themselves."""
    return [c for c in commands if os.path.basename(c[0]) == "cmake" and ("-S" in c or "--build" in c)]


def cmake_definitions(args):
    """{NAME: VALUE} of the -DNAME=VALUE arguments."""
    return dict(a[2:].split("=", 1) for a in args if a.startswith("-D"))


def build_script_flags(args):
    """The build script's own options among `args` (everything but -D)."""
    return [a for a in args if a.startswith("--")]
