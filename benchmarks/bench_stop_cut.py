"""The final cut of the stop rule (`base.cut_at_stop`) and the answer's start (`base.answer_start`) on long texts
full of fenced blocks, against the marker search before issue 39 (anchor) and one `str.find` pass (the floor).

A text of `--sizes` characters (default 50k, 100k, 200k, 400k) made of small fenced blocks (`"```py\\nx = 1\\n```\\n"`,
20 characters each, no `<think>` anywhere) and a stop string that does not occur, so every cut reads the whole
text. Before issue 39 each block marker searched for `<think>` from its own position to the end of the text: one
pass per block, quadratic in the length. The anchor runs today's `cut_at_stop` with that search put back (the marker
finder without its memory); both must give the same result. Median of `--repeats` timings.

    .venv/bin/python benchmarks/bench_stop_cut.py [--json benchmarks/results/stop_cut.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from unittest import mock

from pettingllms.backends import base

BLOCK = "```py\nx = 1\n```\n"
STOP = ("</answer>",)
NEXT_MARKER = base._next_marker


def searched_from_every_marker(markers, pos, mode):
    """The marker search before issue 39: each call finds every marker from `pos` anew (no memory)."""
    return NEXT_MARKER(base._Markers(markers.text), pos, mode)


def seconds(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(size: int, repeats: int) -> dict[str, float]:
    text = (BLOCK * (size // len(BLOCK) + 1))[:size]
    now = seconds(lambda: base.cut_at_stop(text, STOP), repeats)
    answer = seconds(lambda: base.answer_start(text), repeats)
    floor = seconds(lambda: text.find(STOP[0]), repeats)
    with mock.patch.object(base, "_next_marker", searched_from_every_marker):
        assert base.cut_at_stop(text, STOP) is None
        before = seconds(
            lambda: base.cut_at_stop(text, STOP), max(1, repeats // 3 if size > 100_000 else repeats)
        )
    assert base.cut_at_stop(text, STOP) is None
    return {
        "characters": size,
        "blocks": text.count("```") // 2,
        "cut_s": now,
        "answer_start_s": answer,
        "anchor_before_s": before,
        "str_find_s": floor,
        "speedup_vs_before": before / now,
        "cut_over_str_find": now / floor,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="50000,100000,200000,400000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [measure(int(size), args.repeats) for size in args.sizes.split(",")]
    print(
        f"{'chars':>8} {'blocks':>7} {'cut (s)':>9} {'answer (s)':>11} {'before (s)':>11} {'str.find (s)':>13}"
    )
    for row in rows:
        print(
            f"{row['characters']:>8,} {row['blocks']:>7,} {row['cut_s']:>9.4f} {row['answer_start_s']:>11.4f} "
            f"{row['anchor_before_s']:>11.3f} {row['str_find_s']:>13.6f}"
        )
    for small, large in zip(rows, rows[1:]):
        growth = large["cut_s"] / small["cut_s"]
        print(
            f"{small['characters']:,} -> {large['characters']:,} characters: cut x{growth:.2f}, "
            f"before x{large['anchor_before_s'] / small['anchor_before_s']:.2f}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
