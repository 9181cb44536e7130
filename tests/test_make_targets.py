"""`make help` lists every target of the Makefile, each with what it does."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_make_help_lists_every_target():
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):(?!=)", makefile, re.M))
    phony = set(re.search(r"^\.PHONY:(.*)$", makefile, re.M).group(1).split())
    out = subprocess.run(
        ["make", "-s", "help"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    listed = {m.group(1): m.group(2) for m in re.finditer(r"^make (\S+)\s+(.+)$", out, re.M)}
    assert targets == phony == set(listed), (targets, phony, set(listed))
    assert all(len(text) > 10 for text in listed.values())
