"""README.md is true: every ```python block runs, and a block followed by a ```text block
prints exactly that text.

The python blocks run in order in one namespace (as a reader pastes them into one
session), from the repository root.  The comparison is exact, line by line, after removing
trailing blanks.  ``python tests/test_readme.py`` prints what each block prints;
``python tests/test_readme.py --write`` puts it into README.md's text blocks after a
deliberate change of output (then read the diff: the prose around a block may need it too).
"""
import contextlib
import functools
import io
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
FENCE = re.compile(r"^```([\w-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(text):
    """The fenced blocks of ``text`` as (language, body), in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def pairs(text):
    """(python code, the text block right after it or None) for every python block."""
    found = blocks(text)
    out = []
    for i, (lang, body) in enumerate(found):
        if lang == "python":
            nxt = found[i + 1] if i + 1 < len(found) else None
            out.append((body, nxt[1] if nxt is not None and nxt[0] == "text" else None))
    return out


def _normal(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


@functools.lru_cache(maxsize=None)
def outputs(code_blocks):
    """What each code block prints, run in order in one namespace."""
    namespace = {"__name__": "__readme__"}
    printed = []
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for code in code_blocks:
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
            printed.append(buffer.getvalue())
    finally:
        os.chdir(cwd)
    return tuple(printed)


def mismatches(text):
    """Blocks of ``text`` whose printed output differs from their text block: (index, shown, printed)."""
    found = pairs(text)
    printed = outputs(tuple(code for code, _ in found))
    return [(i, shown, out) for i, ((_, shown), out) in enumerate(zip(found, printed))
            if shown is not None and _normal(shown) != _normal(out)]


def _readme():
    with open(README, encoding="utf-8") as fh:
        return fh.read()


def test_every_readme_block_prints_what_the_readme_shows():
    text = _readme()
    found = pairs(text)
    assert sum(shown is not None for _, shown in found) >= 2, "README shows the output of at least two blocks"
    wrong = mismatches(text)
    assert not wrong, "\n\n".join(f"README python block {i + 1} shows:\n{shown}\nbut prints:\n{out}"
                                  for i, shown, out in wrong)


def test_every_readme_block_prints_something_when_run_as_a_script():
    """issue 43, item 6: a block ending in a bare expression (``fit.summary()``) shows its value in a
    notebook but prints nothing when pasted into a script; every block must print what it shows."""
    found = pairs(_readme())
    printed = outputs(tuple(code for code, _ in found))
    silent = [i + 1 for i, out in enumerate(printed) if not out.strip()]
    assert not silent, f"README python blocks {silent} print nothing when run as a script"


def test_the_silence_check_catches_a_bare_expression():
    assert outputs(("x = 1\nx",)) == ("",)  # what the check above would flag


def test_the_check_fails_when_a_printed_number_changes():
    # Mutation: change one digit of a printed number in README's first text block that
    # shows a number: the comparison must catch it.
    text = _readme()
    for lang, body in blocks(text):
        m = re.search(r"\d", body) if lang == "text" else None
        if m:
            digit = body[m.start()]
            changed = body[:m.start()] + ("1" if digit != "1" else "2") + body[m.end():]
            mutated = text.replace(f"```text\n{body}```", f"```text\n{changed}```", 1)
            assert mutated != text
            assert mismatches(mutated), "changing a printed digit went unnoticed"
            return
    pytest.fail("README shows no printed number")


def test_the_quick_start_walks_the_whole_path():
    # plan, select, the curator's verdict, estimate, intervals: on bundled data.
    code = "\n".join(code for code, _ in pairs(_readme()))
    for call in ("dpstats.plan(", "dpstats.dp_select(", "load_dataset(", "curator_report(", ".estimate("):
        assert call in code, f"README's code never calls {call}"
    for mention in ("fit.estimate", "dpstats.plan", "vignettes/06-planning.py"):
        assert mention in _readme()


def write_outputs(text):
    """``text`` with every text block that follows a python block replaced by what it prints."""
    matches = list(FENCE.finditer(text))
    printed = iter(outputs(tuple(code for code, _ in pairs(text))))
    out, last, current = [], 0, None
    for i, m in enumerate(matches):
        if m.group(1) == "python":
            current = next(printed)
        elif m.group(1) == "text" and i > 0 and matches[i - 1].group(1) == "python":
            body = "\n".join(line.rstrip() for line in current.strip("\n").splitlines())
            out += [text[last:m.start()], f"```text\n{body}\n```"]
            last = m.end()
    return "".join(out) + text[last:]


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    if "--write" in sys.argv:
        updated = write_outputs(_readme())  # before opening README for writing
        with open(README, "w", encoding="utf-8") as fh:
            fh.write(updated)
    else:
        found = pairs(_readme())
        for i, ((code, _), out) in enumerate(zip(found, outputs(tuple(c for c, _ in found)))):
            sys.stdout.write(f"----- block {i + 1}\n{out}")
