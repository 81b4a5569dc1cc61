"""The `pettingllms` command: `list` the environments, `play` one in the terminal.

    pettingllms list
    pettingllms play sokoban-v0 --seed 3            # you are the plan agent; the tool agent is skipped
    pettingllms play plan-path-v0 --tool oracle     # the tool agent proposes the solver's answer
    pettingllms play sudoku-v0 --demo               # both agents scripted by the solver (non-interactive)
    pettingllms leaderboard leaderboard/results --out leaderboard   # tables and plots of pettingllms-eval results

In `play`, type an answer (`<answer>U R</answer>`, or just the inside, e.g. `U R R`), `hint` for the solver's
answer, or `quit`. End of input quits.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import pettingllms
from pettingllms.core.parsing import extract_answer


def _list(args: argparse.Namespace) -> int:
    rows = []
    for env_id, env_spec in sorted(pettingllms.registry.items()):
        entry = (
            env_spec.load()
        )  # the class: listing builds no env, so a missing dependency is shown, not raised
        env_class = entry if isinstance(entry, type) else type(pettingllms.make(env_id).unwrapped)
        workflows = "; ".join(f"{name}: {', '.join(agents)}" for name, agents in env_class.WORKFLOWS.items())
        needs = getattr(env_class, "REQUIRES", "") or "nothing beyond the core install"
        rows.append((env_id, workflows, f"{env_spec.description} Needs: {needs}."))
    width = max(len(row[0]) for row in rows)
    agents_width = max(len(row[1]) for row in rows)
    for env_id, workflows, description in rows:
        print(f"{env_id:<{width}}  {workflows:<{agents_width}}  {description}")
    print(
        "textarena/<game id>: any game of TextArena's registry (extra textarena), e.g. textarena/TicTacToe-v0"
    )
    return 0


def _ask(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


def _play(args: argparse.Namespace) -> int:
    from pettingllms.envs.tool_plan import ToolPlanEnv

    playable = sorted(
        env_id
        for env_id, env_spec in pettingllms.registry.items()
        if isinstance(factory := env_spec.load(), type) and issubclass(factory, ToolPlanEnv)
    )
    if args.env in pettingllms.registry and args.env not in playable:
        print(
            f"{args.env} cannot be played in the terminal: `play` gives you the plan agent of a puzzle with a "
            f"solver to script the tool agent; playable: {', '.join(playable)}",
            file=sys.stderr,
        )
        return 2
    workflow = "single" if args.tool == "skip" and not args.demo else "mas"
    env = pettingllms.make(args.env, workflow=workflow, render_mode="ansi", max_turns=args.max_turns)
    env.reset(seed=args.seed)
    raw = env.unwrapped
    human: Callable[[str], str | None] = (lambda agent: raw.solution()) if args.demo else _human_turn(raw)
    print(f"{args.env}, seed {args.seed}. {raw.TASK}\n{raw.ANSWER_FORMAT}\n")
    for agent in env.agent_iter():
        _, _, termination, truncation, info = env.last()
        if termination or truncation:
            env.step(None)
            continue
        if agent == "plan":
            print(env.render())
            if raw.proposal is not None:
                print("tool agent: " + raw.proposal.summary)
            action = human(agent)
            if action is None:
                print("bye")
                return 0
            print(f"plan: {action}")
        else:
            action = raw.solution()
        env.step(action)
        if "error" in env.infos.get(agent, {}) and agent == "plan":
            print("! " + env.infos[agent]["error"])
    print(env.render())
    if raw.success:
        print(f"Solved in {raw.turn + 1} turn(s)!")
        return 0
    print("Out of turns: not solved.")
    return 1


def _human_turn(raw) -> Callable[[str], str | None]:
    def ask(agent: str) -> str | None:
        while True:
            line = _ask("your answer> ")
            if line is None or line.strip().lower() in ("q", "quit", "exit"):
                return None
            if line.strip().lower() == "hint":
                print("hint: " + raw.solution())
                continue
            return line if extract_answer(line) is not None else f"<answer>{line}</answer>"

    return ask


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pettingllms", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every registered environment, its agents and what it is")
    play = commands.add_parser("play", help="play the plan agent of a puzzle in the terminal")
    play.add_argument("env", help="an environment id, e.g. sokoban-v0")
    play.add_argument("--seed", type=int, default=0, help="instance seed (default 0)")
    play.add_argument("--max-turns", type=int, default=10, help="turns before the game stops (default 10)")
    play.add_argument(
        "--tool",
        choices=["skip", "oracle"],
        default="skip",
        help="skip the tool agent, or let the solver propose",
    )
    play.add_argument(
        "--demo", action="store_true", help="script both agents with the solver (no input needed)"
    )
    board = commands.add_parser(
        "leaderboard", help="a Markdown table and an HTML page of pettingllms-eval results"
    )
    board.add_argument("results", help="folder of pettingllms-eval JSON results")
    board.add_argument("--out", required=True, help="output folder (leaderboard.md, index.html, plots/)")
    return parser


def _leaderboard(args: argparse.Namespace) -> int:
    from pettingllms.core.errors import DependencyNotInstalled
    from pettingllms.core.extras import require_extra

    try:
        require_extra("eval", "pettingllms leaderboard")
        from pettingllms.eval.leaderboard import build_leaderboard

        table = build_leaderboard(args.results, args.out)
    except (ValueError, DependencyNotInstalled) as error:
        print(f"pettingllms leaderboard: error: {error}", file=sys.stderr)
        return 2
    for note in table.skipped:
        print(f"skipped {note}", file=sys.stderr)
    print(f"{len(table.labels)} policies x {len(table.envs)} envs -> {args.out}/leaderboard.md, index.html")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return {"list": _list, "play": _play, "leaderboard": _leaderboard}[args.command](args)
    except pettingllms.PettingLLMsError as error:
        print(f"pettingllms: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
