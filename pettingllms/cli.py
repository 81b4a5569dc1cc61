"""The `pettingllms` command: `list` the environments, `play` one in the terminal, `view` a run or an evaluation.

    pettingllms list
    pettingllms play sokoban-v0 --seed 3            # you are the plan agent; the tool agent is skipped
    pettingllms play plan-path-v0 --others oracle   # the tool agent proposes the solver's answer
    pettingllms play code-v0 --as tester --others oracle   # you write the tests; the solver codes
    pettingllms play sudoku-v0 --demo               # every agent scripted by the solver (non-interactive)
    pettingllms play plan-path-v0 --policy runs/tiny/plan_path_per_role   # you are the plan agent, beside
                                                    # the trained tool agent
    pettingllms play plan-path-v0 --watch --policy runs/tiny/plan_path_per_role --pause   # the trained team alone
    pettingllms view runs/tiny/plan_path_per_role   # an HTML page of the run's sampled trees and curves
    pettingllms view results/at.json --out view/    # an evaluation's episodes as conversations
    pettingllms leaderboard leaderboard/results --out leaderboard   # tables and plots of pettingllms-eval results
    pettingllms serve plan-path-v0 --port 8000 --others oracle --agent tool   # an OpenEnv server (extra openenv)

In `play`, you see your agent's observation (its whole prompt) and type an answer (`<answer>U R</answer>`, or
just the inside, e.g. `U R R`), `hint` for the solver's answer, or `quit`. End of input quits. Any environment of
this package (a `TextAECEnv` with `solution()` and `_render_text`) can be played.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

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
    refused = _unplayable(args.env)
    if refused:
        print(refused, file=sys.stderr)
        return 2
    workflow = args.workflow or (
        "mas" if args.demo or args.watch or args.others == "oracle" or args.policy else "single"
    )
    setting = _policy_setting(args)
    env = pettingllms.make(
        args.env, workflow=workflow, render_mode="ansi", max_turns=args.max_turns, **setting
    )
    env.reset(seed=args.seed)
    raw = env.unwrapped
    player = None if args.watch or args.demo else _player(args, raw, workflow)
    agents = [agent for agent in raw.possible_agents if agent != player]
    others, name = _others(args, raw, workflow, agents, setting)
    human = _human_turn(raw)
    watching = "nobody: the team plays" if player is None else repr(player)
    shown_setting = f" {json.dumps(setting)}" if setting else ""
    print(
        f"{args.env}{shown_setting}, seed {args.seed}, workflow {workflow!r}: you play {watching}"
        + (" (demo)" * args.demo)
    )
    for agent in env.agent_iter():
        _, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        if agent != player:
            if args.watch:
                print(env.observe(agent))
            action = others(env, agent)
            print(f"{agent} ({name}): {_shown(action)}")
        else:
            print(env.observe(agent))
            action = human(agent)
            if action is None:
                print("bye")
                return 0
            print(f"{agent}: {_shown(action)}")
        env.step(action)
        if "error" in env.infos.get(agent, {}) and (agent == player or args.watch):
            print("! " + env.infos[agent]["error"])
        if args.pause and _ask("(Enter: next step, q: quit) ") in (None, "q"):
            print("bye")
            return 0
    print(env.render())
    if raw.success:
        print(f"Solved in {raw.turn + 1} turn(s)!")
        return 0
    print("Episode over: not solved.")
    return 1


def _unplayable(env_id: str) -> str | None:
    """Why `env_id` cannot be played here, or None (unknown ids fail later, in `make`, with suggestions)."""
    from pettingllms.core.env import TextAECEnv

    playable = sorted(
        env_id
        for env_id, env_spec in pettingllms.registry.items()
        if isinstance(factory := env_spec.load(), type) and issubclass(factory, TextAECEnv)
    )
    if env_id in pettingllms.registry and env_id not in playable:
        return (
            f"{env_id} cannot be played in the terminal: `play` plays this package's text environments "
            f"(TextAECEnv); playable: {', '.join(playable)}"
        )
    return None


def _policy_setting(args: argparse.Namespace) -> dict:
    """The env setting of the training run that `--policy` names (e.g. the default run's 7x7 grids), so that a
    trained team plays where it was trained; {} for other policies."""
    if not args.policy:
        return {}
    from pettingllms.core.extras import require_extra

    require_extra("eval", "pettingllms play --policy")
    from pettingllms.eval.policy_specs import run_env_kwargs

    return run_env_kwargs(args.policy, args.env) or {}


def _others(
    args: argparse.Namespace, raw, workflow: str, agents: Sequence[str], setting: dict
) -> tuple[Callable[[object, str], str], str]:
    """Who answers for `agents` (those the person does not play), and the name printed beside their answers: the
    `--policy` spec (loaded as `pettingllms-eval --policy` loads it; agent=spec pairs name exactly `agents`),
    else the env's solver."""
    if not args.policy:
        return (lambda env, agent: raw.solution(agent)), "solver"
    from pettingllms.core.extras import require_extra

    require_extra("eval", "pettingllms play --policy")
    from pettingllms.play_policy import policy_answerer

    answer = policy_answerer(
        args.policy, args.env, agents, workflow=workflow, env_kwargs=setting, seed=args.seed
    )
    return answer, args.policy


def _player(args: argparse.Namespace, raw, workflow: str) -> str:
    """The agent the person plays: `--as`, or by default the one agent of the env's "single" workflow."""
    player = args.play_as or raw.WORKFLOWS["single"][-1]
    if player not in raw.possible_agents:
        raise pettingllms.ConfigError(
            f"--as {player!r}: workflow {workflow!r} of {args.env} has agents {raw.possible_agents}"
            + ("; pass --others oracle to play beside the others" if workflow == "single" else "")
        )
    return player


def _shown(action: str, limit: int = 400) -> str:
    """An answer as printed: whole when short, else its first `limit` characters and a count."""
    return action if len(action) <= limit else f"{action[:limit]}... ({len(action):,} characters)"


def _human_turn(raw) -> Callable[[str], str | None]:
    def ask(agent: str) -> str | None:
        while True:
            line = _ask("your answer> ")
            if line is None or line.strip().lower() in ("q", "quit", "exit"):
                return None
            if line.strip().lower() == "hint":
                print("hint: " + raw.solution(agent))
                continue
            bare = extract_answer(line) is None and "```" not in line
            return f"<answer>{line}</answer>" if bare else line

    return ask


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pettingllms", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every registered environment, its agents and what it is")
    play = commands.add_parser("play", help="play one agent of an environment in the terminal")
    play.add_argument("env", help="an environment id, e.g. sokoban-v0")
    play.add_argument("--seed", type=int, default=0, help="instance seed (default 0)")
    play.add_argument("--max-turns", type=int, default=10, help="turns before the game stops (default 10)")
    play.add_argument(
        "--as",
        dest="play_as",
        default=None,
        help="the agent you play (default: the agent of the env's 'single' workflow, e.g. plan)",
    )
    play.add_argument(
        "--others",
        choices=["skip", "oracle"],
        default="skip",
        help="skip the other agents (play the 'single' workflow), or let the solver answer for them (the team)",
    )
    play.add_argument(
        "--policy",
        default=None,
        help="who answers for the other agents instead of the solver: a pettingllms-eval policy spec (a run "
        "folder, a checkpoint, a model folder, tiny, random, oracle, or agent=spec pairs), greedy",
    )
    play.add_argument(
        "--watch",
        action="store_true",
        help="nobody types: every agent is answered by --policy (default: the solver), each prompt shown",
    )
    play.add_argument("--pause", action="store_true", help="wait for Enter after every step")
    play.add_argument(
        "--workflow",
        default=None,
        help="the env's workflow (default: 'single' when you play alone, else 'mas'), e.g. for a single-agent run",
    )
    play.add_argument(
        "--demo", action="store_true", help="script every agent with the solver (no input needed)"
    )
    view = commands.add_parser(
        "view",
        help="a static HTML page of a training run (its sampled trees) or of a pettingllms-eval result",
    )
    view.add_argument("path", help="a run folder, or a pettingllms-eval result file (.json)")
    view.add_argument("--out", default=None, help="output folder (default: RUN/view, or RESULT.json.view)")
    board = commands.add_parser(
        "leaderboard", help="a Markdown table and an HTML page of pettingllms-eval results"
    )
    board.add_argument("results", help="folder of pettingllms-eval JSON results")
    board.add_argument("--out", required=True, help="output folder (leaderboard.md, index.html, plots/)")
    _add_serve(commands)
    return parser


def _add_serve(commands) -> None:
    """The `serve` subcommand: an env as an OpenEnv server."""
    serve = commands.add_parser(
        "serve", help="serve an environment as an OpenEnv environment (HTTP and WebSocket; extra openenv)"
    )
    serve.add_argument("env", help="an environment id, e.g. plan-path-v0 or textarena/TicTacToe-v0")
    serve.add_argument("--port", type=int, required=True, help="the port to listen on")
    serve.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--others",
        default=None,
        help="play the agents other than --agent on the server, frozen: oracle (the env's solver), random, or "
        "any pettingllms-eval --policy spec (a run folder, a model folder, tiny, openai:MODEL@URL, agent=spec "
        "pairs); default: the client acts for every agent in turn",
    )
    serve.add_argument("--tier", default=None, help="the env's difficulty tier (easy..expert, docs/tiers.md)")
    serve.add_argument(
        "--agent", default=None, help="the agent the client plays with --others (default: the first)"
    )
    serve.add_argument(
        "--max-sessions",
        type=int,
        default=8,
        help="concurrent WebSocket sessions (default 8); one more is closed with code 1013 and the reason",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="close a session that sends nothing for this long (code 4408, with the reason), freeing its slot "
        "(default 300; 0: never)",
    )
    serve.add_argument(
        "--sandbox-workers",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="programs run at once for all sessions (code-v0's tests, tool programs), shared fairly: one "
        "session's loops delay each program of another by at most one program's time limit (default: the "
        f"machine's cores, {os.cpu_count() or 1} here)",
    )


def _serve(args: argparse.Namespace) -> int:
    from pettingllms.core.extras import require_extra

    require_extra("openenv", "pettingllms serve")
    from pettingllms.integrations.openenv_server import serve

    serve(
        args.env,
        args.host,
        args.port,
        others=args.others,
        agent=args.agent,
        max_sessions=args.max_sessions,
        idle_timeout=args.idle_timeout,
        sandbox_workers=args.sandbox_workers,
        tier=args.tier,
        answer=_frozen_others(args),
    )
    return 0


def _frozen_others(args: argparse.Namespace):
    """The policy `serve --others SPEC` names, loaded as `pettingllms-eval --policy` loads it, for the agents other
    than `--agent` (greedy, at a run's own budget); None for no `--others` or a baseline the server plays itself."""
    from pettingllms.integrations.openenv_server import BASELINES, served_agents, served_env_kwargs

    if args.others is None or args.others in BASELINES:
        return None
    from pettingllms.core.extras import require_extra

    require_extra("eval", f"pettingllms serve --others {args.others}")
    from pettingllms.play_policy import policy_answerer

    env_kwargs = served_env_kwargs(args.env, args.tier, None)
    agents, workflow = served_agents(args.env, env_kwargs)
    agent = args.agent or agents[0]
    if agent not in agents:
        raise pettingllms.ConfigError(f"--agent {agent!r}: {args.env} has agents {agents}")
    others = [name for name in agents if name != agent]
    return policy_answerer(args.others, args.env, others, workflow=workflow, env_kwargs=env_kwargs)


def _leaderboard(args: argparse.Namespace) -> int:
    from pettingllms.core.errors import DependencyNotInstalled
    from pettingllms.core.extras import require_extra

    try:
        require_extra("eval", "pettingllms leaderboard")
        from pettingllms.presentation.leaderboard import build_leaderboard

        table = build_leaderboard(args.results, args.out)
    except (ValueError, DependencyNotInstalled) as error:
        print(f"pettingllms leaderboard: error: {error}", file=sys.stderr)
        return 2
    for note in table.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"{len(table.labels)} policies x {len(table.envs)} envs -> {args.out}/leaderboard.md, index.html")
    return 0


def _view(args: argparse.Namespace) -> int:
    from pettingllms.presentation.viewer import build_view

    page = build_view(Path(args.path), None if args.out is None else Path(args.out))
    print(f"wrote {page} (open {page.resolve().as_uri()})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        commands = {"list": _list, "play": _play, "view": _view, "leaderboard": _leaderboard, "serve": _serve}
        return commands[args.command](args)
    except pettingllms.PettingLLMsError as error:
        print(f"pettingllms: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
