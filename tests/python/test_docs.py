"""Every command block of README.md and docs/tutorial.md runs, and prints what the page says.

A block fenced as ```console is a session: lines starting with `$ ` are commands (a trailing
backslash continues one; a here-document runs up to its terminator), the lines after a command
up to the next `$ ` are the output the page shows. Each block runs in order in one scratch folder
that links the checkout's `data`, `experiments` and `plots` folders, with the build's
`stragglersim` first on PATH, so the pages' relative paths work as written and nothing is written
into the checkout. Output is compared line by line: words exactly, numbers within the page's
tolerance (an HTML comment `<!-- tolerance: 0.05 -->` just before the block sets the relative
tolerance of its numbers; the default 1e-9 says the program's output is reproduced to its
printed digits); a shown line `...` skips any number of actual lines. A page with no console
block fails the test: the check cannot silently pass on nothing.
"""

import os
import re
import subprocess

import pytest

from conftest import BUILD, ROOT

PAGES = ["README.md", "docs/tutorial.md"]
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
TOLERANCE = re.compile(r"<!--\s*tolerance:\s*([0-9.eE+-]+)\s*-->")


def console_blocks(text):
    """(tolerance, [(command, [expected lines])]) per ```console block of a page."""
    blocks = []
    lines = text.split("\n")
    i = 0
    tolerance = 1e-9
    while i < len(lines):
        match = TOLERANCE.search(lines[i])
        if match:
            tolerance = float(match.group(1))
        if lines[i].strip() != "```console":
            i += 1
            continue
        i += 1
        body = []
        while lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        blocks.append((tolerance, session(body)))
        tolerance = 1e-9
        i += 1
    return blocks


def session(body):
    """Splits a block into commands (with continuations and here-documents) and outputs."""
    steps = []
    i = 0
    while i < len(body):
        line = body[i]
        assert line.startswith("$ "), f"console block line outside a command: {line!r}"
        command = line[2:]
        i += 1
        while command.endswith("\\"):
            command = command + "\n" + body[i]
            i += 1
        heredoc = re.search(r"<<\s*'?(\w+)'?", command)
        if heredoc:
            end = heredoc.group(1)
            while body[i] != end:
                command += "\n" + body[i]
                i += 1
            command += "\n" + end
            i += 1
        expected = []
        while i < len(body) and not body[i].startswith("$ "):
            expected.append(body[i])
            i += 1
        steps.append((command, expected))
    return steps


def same_line(shown, actual, tolerance):
    shown_words, actual_words = NUMBER.split(shown), NUMBER.split(actual)
    if [w.split() for w in shown_words] != [w.split() for w in actual_words]:
        return False
    for a, b in zip(NUMBER.findall(shown), NUMBER.findall(actual)):
        x, y = float(a), float(b)
        if abs(x - y) > tolerance * max(abs(x), abs(y)) and a != b:
            return False
    return True


def matches(shown, actual, tolerance):
    """Whether the actual lines are the shown ones (`...` skips any number of lines)."""
    if not shown:
        return True
    if shown[0].strip() == "...":
        return any(matches(shown[1:], actual[k:], tolerance) for k in range(len(actual) + 1))
    return bool(actual) and same_line(shown[0], actual[0], tolerance) and \
        matches(shown[1:], actual[1:], tolerance)


def scratch(tmp_path):
    """The scratch folder as the checkout looks to the pages: its folders linked, the build under
    test as build/release, so the pages' own `export` lines find the program and the module.
    No PYTHONPATH is given: a page that imports the module must say how it is found."""
    for folder in ("data", "experiments", "plots"):
        if os.path.isdir(os.path.join(ROOT, folder)):
            os.symlink(os.path.join(ROOT, folder), tmp_path / folder)
    (tmp_path / "build").mkdir()
    os.symlink(BUILD, tmp_path / "build" / "release")
    env = dict(os.environ)
    env["PATH"] = os.path.join(BUILD, "experiments") + os.pathsep + env["PATH"]
    env.pop("PYTHONPATH", None)
    return env


@pytest.mark.parametrize("page", PAGES)
def test_every_command_block_runs_as_shown(page, tmp_path):
    path = os.path.join(ROOT, page)
    with open(path, encoding="utf-8") as f:
        blocks = console_blocks(f.read())
    assert blocks, f"{page} has no ```console block to check"
    env = scratch(tmp_path)
    for tolerance, steps in blocks:
        for command, expected in steps:
            result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command],
                                    cwd=tmp_path, env=env, capture_output=True, text=True,
                                    timeout=600)
            assert result.returncode == 0, f"{page}: `{command}` exited " \
                f"{result.returncode}:\n{result.stderr}"
            actual = [line for line in result.stdout.rstrip("\n").split("\n") if result.stdout]
            shown = [line for line in expected if line.strip()]
            assert matches(shown, actual, tolerance), \
                f"{page}: `{command}` printed\n" + "\n".join(actual) + \
                "\nbut the page shows\n" + "\n".join(shown)


def test_the_checker_tells_numbers_apart():
    assert same_line("total 21.265 s", "total 21.265 s", 1e-9)
    assert not same_line("total 21.265 s", "total 21.266 s", 1e-9)
    assert same_line("total 21.265 s", "total 21.266 s", 1e-3)
    assert not same_line("total 21.265 s", "mean 21.265 s", 1e-3)
    assert matches(["a 1", "...", "d 4"], ["a 1", "b 2", "c 3", "d 4"], 1e-9)
    assert not matches(["a 1", "...", "d 5"], ["a 1", "b 2", "c 3", "d 4"], 1e-9)
    steps = session(["$ cat > x.json <<'EOF'", "{}", "EOF", "$ echo 1 \\", "  2", "1 2"])
    assert steps == [("cat > x.json <<'EOF'\n{}\nEOF", []), ("echo 1 \\\n  2", ["1 2"])]
