"""Every Python and shell block of the README and `docs/` runs as a reader would run it, or says why not.

A block is marked on the line above its fence: `<!-- block: run -->` (run in the default set), `<!-- block: slow
(why) -->` (run with `-m slow`), or `<!-- block: not run (why) -->`. Each block runs on its own, in a fresh folder
that holds `.venv` (this interpreter's environment) and `configs/` (the repository's), so that the blocks' relative
paths mean what they mean in a checkout; Python blocks run in a fresh interpreter. The README's env table is held
to the registry.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import pettingllms

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>`{3,})(?P<language>[a-z]*)\s*$")
MARKER = re.compile(r"^ *<!-- block: (?P<kind>run|slow|not run)(?: \((?P<why>[^)]+)\))? -->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    language: str
    kind: str | None  # run, slow, not run; None: unmarked
    why: str | None
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The page's Python and shell blocks with their markers (the line right above the fence). Fences nest as in
    CommonMark: a block opened with N backticks closes at a line of at least N, so a ```python inside a ````text
    block (an env page's transcript) is text."""
    lines = page.read_text().splitlines()
    found, index = [], 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        ticks = len(fence["ticks"])
        close = next(
            i for i in range(index + 1, len(lines)) if re.fullmatch(rf" *`{{{ticks},}}\s*", lines[i])
        )
        if fence["language"] in ("python", "bash"):
            marker = MARKER.match(lines[index - 1]) if index else None
            found.append(
                Block(
                    page,
                    index + 1,
                    fence["language"],
                    marker["kind"] if marker else None,
                    marker["why"] if marker else None,
                    textwrap.dedent("\n".join(lines[index + 1 : close])) + "\n",
                )
            )
        index = close + 1
    return found


BLOCKS = [block for page in PAGES for block in blocks_of(page)]


def test_every_block_is_marked_and_every_exception_says_why():
    assert len(BLOCKS) >= 10
    unmarked = [block.name for block in BLOCKS if block.kind is None]
    assert unmarked == [], "mark each block <!-- block: run|slow (why)|not run (why) --> on the line above"
    assert [block.name for block in BLOCKS if block.kind != "run" and not block.why] == []


def run_block(block: Block, folder: Path, timeout: int) -> str:
    """Run `block` in `folder` (with the checkout's .venv and configs beside it); its standard output."""
    (folder / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    (folder / "configs").symlink_to(ROOT / "configs", target_is_directory=True)
    command = (
        [sys.executable, "-c", block.code]
        if block.language == "python"
        else ["bash", "-euo", "pipefail", "-c", block.code]
    )
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "run"], ids=lambda b: b.name)
def test_the_block_runs(block, tmp_path):
    run_block(block, tmp_path, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "slow"], ids=lambda b: b.name)
def test_the_long_block_runs(block, tmp_path):
    run_block(block, tmp_path, timeout=3600)


def test_the_readme_env_loop_prints_what_the_readme_shows(tmp_path):
    loop = next(b for b in BLOCKS if b.page == ROOT / "README.md" and "env.agent_iter()" in b.code)
    lines = loop.page.read_text().splitlines()
    opening = lines.index("```text", loop.line)  # the first text block after the loop's: what it prints
    shown = lines[opening + 1 : lines.index("```", opening + 1)]
    printed = run_block(loop, tmp_path, timeout=300)
    assert [line.rstrip() for line in printed.splitlines()] == shown


def test_the_readme_env_table_lists_every_registered_env():
    readme = (ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| `([a-z0-9-]+-v\d+)` \|", readme, flags=re.M))
    assert listed == set(pettingllms.registry)
    assert "| `textarena/<game>` |" in readme


def test_the_light_install_named_in_the_docs_is_the_core_dependencies():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {re.match(r"[A-Za-z0-9_-]+", requirement)[0] for requirement in project["dependencies"]}
    assert core == {"pettingzoo", "gymnasium", "numpy", "sympy"}
    install = next(b for b in blocks_of(ROOT / "README.md") if "pip install ." in b.code).code
    architecture = " ".join((ROOT / "docs" / "architecture.md").read_text().split())
    assert "an environment user installs `pettingzoo`, `gymnasium`, `numpy` and `sympy` only" in architecture
    assert all(name in install for name in core)


def test_the_extras_that_cannot_share_an_environment_are_apart_and_said_so():
    """OpenEnv 0.10 needs mcp < 2, verifiers 0.4.0 pins mcp 2.0.0: `all` holds one of them, the docs say why, and
    CI tests the other in its own environment."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["openenv"] == ["openenv>=0.10,<0.11"] and "verifiers==0.4.0" in extras["verifiers"]
    everything = re.search(r"\[(.*)\]", extras["all"][0])[1].split(",")
    assert "verifiers" in everything and "openenv" not in everything
    install = " ".join((ROOT / "docs" / "install.md").read_text().split())
    assert "**`openenv` and `verifiers` cannot be installed together**" in install
    assert "verifiers 0.4.0 depends on mcp==2.0.0" in install
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/setup_openenv.sh" in ci and ".venv-openenv/bin/python -m pytest" in ci


def test_every_docs_page_is_reachable_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        assert f"(docs/{page.name})" in readme, f"docs/{page.name} has no link on the README"
