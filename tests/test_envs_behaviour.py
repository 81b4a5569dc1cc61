"""Behaviour of the puzzle environments beyond conformance: the tool agent's code, loading instances, fuzzing."""

import functools
import re
import textwrap
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markers import needs_bwrap  # noqa: E402

import pettingllms
from pettingllms.core.errors import ConfigError
from pettingllms.envs.tool_plan import INVALID_ACTION_PENALTY, PARSE_ERROR_PENALTY

GRID = textwrap.dedent(
    """\
    S.#..
    ..#.G
    .....
    """
)

BFS_TOOL = '''Let me search.
```python
from collections import deque
grid = """{grid}""".split()
h, w = len(grid), len(grid[0])
find = lambda ch: next((r, c) for r in range(h) for c in range(w) if grid[r][c] == ch)
start, goal = find("@"), find("G")
steps = {{"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}}
queue, seen = deque([(start, [])]), {{start}}
while queue:
    (r, c), path = queue.popleft()
    if (r, c) == goal:
        print("<answer>" + " ".join(path) + "</answer>")
        break
    for name, (dr, dc) in steps.items():
        nr, nc = r + dr, c + dc
        if 0 <= nr < h and 0 <= nc < w and grid[nr][nc] != "#" and (nr, nc) not in seen:
            seen.add((nr, nc))
            queue.append(((nr, nc), path + [name]))
```'''


@needs_bwrap
def test_tool_code_runs_in_the_sandbox_and_the_plan_agent_sees_it():
    env = pettingllms.make("plan-path-v0")
    env.reset(options={"grid": GRID})
    board = env.unwrapped.puzzle.render_text(env.unwrapped.state)
    env.step(BFS_TOOL.format(grid=board))
    info = env.infos["tool"]
    assert info["code_status"] == "ok" and "error" not in info and info["program"] == "solves"
    assert info["reward_local"] == pytest.approx(1.0)  # the simulated copy reaches the goal
    assert not env.unwrapped.success  # the real state did not move
    observation = env.observe("plan")
    assert "from collections import deque" in observation
    assert "Output (status ok):" in observation and "it would solve the puzzle" in observation
    env.step(f"<answer>{' '.join(env.unwrapped.proposal.actions)}</answer>")
    assert env.unwrapped.success and env.infos["plan"]["reward_team"] == 1.0


@needs_bwrap
@pytest.mark.parametrize("env_id", ["plan-path-v0", "sokoban-v0", "sudoku-v0"])
def test_a_tool_program_reads_the_board_on_stdin_and_the_warm_starts_solver_solves_every_instance(env_id):
    from pettingllms.warmstart.tool_programs import PROGRAM_ENVS, PROGRAMS, as_tool_call

    assert env_id in PROGRAM_ENVS
    programs = PROGRAMS[env_id]
    env = pettingllms.make(env_id)
    solved = dict.fromkeys(["correct", *programs.variants], 0)
    for seed in range(12):
        for name, program in [("correct", programs.correct), *programs.variants.items()]:
            env.reset(seed=seed)
            env.step(as_tool_call(program))
            assert env.infos["tool"]["code_status"] == "ok", (name, env.observe("plan"))
            solved[name] += "it would solve the puzzle" in env.observe("plan")
            assert env.infos["tool"]["program"] == (
                "solves" if "it would solve" in env.observe("plan") else "fails"
            )
    assert solved["correct"] == 12  # the program computed every solution from the board it read
    assert all(solved[name] < 12 for name in programs.variants)  # each imperfect variant fails some instance


@needs_bwrap
def test_the_tool_programs_stdin_is_the_board_as_shown():
    env = pettingllms.make("plan-path-v0")
    env.reset(options={"grid": GRID})
    env.step("```python\nimport sys\nprint(repr(sys.stdin.read()))\n```")
    board = env.unwrapped.puzzle.render_text(env.unwrapped.state)
    assert repr(board + "\n") in env.observe("plan") and board in env.observe("tool")


@needs_bwrap
@pytest.mark.parametrize(
    "code, status",
    [
        ("while True:\n    pass", {"timeout"}),
        ("import os\nwhile True:\n    os.fork()", {"timeout", "error"}),  # error: fork fails at the limit
        ("print('x' * 10**8)", {"output_limit"}),
        ("raise ValueError('no plan')", {"error"}),
        ("print('nothing useful')", {"ok"}),
    ],
)
def test_hostile_tool_code_is_a_penalty_with_an_explanation(code, status):
    env = pettingllms.make("plan-path-v0", tool_timeout=1.0)
    env.reset(options={"grid": GRID})
    env.step(f"```python\n{code}\n```")
    info = env.infos["tool"]
    assert info["code_status"] in status and info["program"] == "fails"
    assert info["reward_local"] < 0 and info["error"]
    assert env.agent_selection == "plan"


def test_loaded_sokoban_level_and_solver_optimality():
    level = "#######\n#@ $ .#\n#######"
    env = pettingllms.make("sokoban-v0", workflow="single")
    env.reset(options={"level": level})
    assert env.unwrapped.solution_actions() == ["R", "R", "R"]
    env.step("<answer>right, RIGHT r</answer>")
    assert env.unwrapped.success


def test_blocked_moves_are_penalised_per_move():
    env = pettingllms.make("sokoban-v0", workflow="single")
    env.reset(options={"level": "#######\n#@ $ .#\n#######"})
    env.step("<answer>U U L R</answer>")
    info = env.infos["plan"]
    assert info["invalid_actions"] == 3
    assert "3 action(s) could not be applied" in info["error"]
    progress = env.unwrapped._potential(env.unwrapped.state) - env.unwrapped._potential(
        env.unwrapped.initial_state
    )
    assert info["reward_local"] == pytest.approx(progress - 3 * INVALID_ACTION_PENALTY)


def test_loaded_sudoku_accepts_a_whole_grid_answer():
    env = pettingllms.make("sudoku-v0", workflow="single")
    env.reset(options={"puzzle": "1.34\n34.2\n2.43\n43.1"})
    env.step("<answer>\n1 2 | 3 4\n3 4 | 1 2\n2 1 | 4 3\n4 3 | 2 1\n</answer>")
    assert env.unwrapped.success and "error" not in env.infos["plan"]


@needs_bwrap
@pytest.mark.parametrize("agent", ["tool", "plan"])
def test_a_sudoku_number_too_long_for_int_is_a_parse_error_not_an_exception(agent):
    # issue 24: a 4,301-digit number raised ValueError from parse_placements inside step
    answer = "<answer>(1, 1, " + "9" * 4301 + ") r1c1=" + "7" * 5000 + "</answer>"
    env = pettingllms.make("sudoku-v0")
    env.reset(seed=0)
    if agent == "plan":
        env.step("<answer>nothing</answer>")
    env.step(answer if agent == "plan" else f"```python\nprint({answer!r})\n```")
    info = env.infos[agent]
    assert info["parse_error"] and "no placement found" in info["error"]


def test_loaded_plan_path_grid():
    env = pettingllms.make("plan-path-v0", workflow="single")
    env.reset(options={"grid": GRID})
    assert len(env.unwrapped.solution_actions()) == 7  # around the wall column: D D R R R U R


@pytest.mark.parametrize(
    "env_id, options, field",
    [
        ("sokoban-v0", {"level": "#####\n#@ #\n#####"}, "level"),
        ("sudoku-v0", {"puzzle": "1234"}, "puzzle"),
        ("plan-path-v0", {"grid": "S.#\n##G"}, "grid"),
        ("plan-path-v0", {"split": "test"}, "split"),
    ],
)
def test_bad_instances_raise_an_error_naming_the_option(env_id, options, field):
    env = pettingllms.make(env_id)
    with pytest.raises((ConfigError, ValueError), match=field):
        env.reset(options=options)


def test_unknown_reset_options_warn():
    env = pettingllms.make("sokoban-v0")
    with pytest.warns(UserWarning, match="levle"):
        env.reset(options={"levle": "x"})


def test_parse_error_penalty_is_documented_value():
    env = pettingllms.make("plan-path-v0", workflow="single")
    env.reset(seed=0)
    env.step("<answer>north</answer>")
    assert env.infos["plan"]["reward_local"] == -PARSE_ERROR_PENALTY
    assert "unknown move 'north'" in env.infos["plan"]["error"]


@pytest.mark.parametrize("env_id", sorted(pettingllms.registry))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300) | st.builds(lambda s: f"<answer>{s}</answer>", st.text(max_size=80)))
def test_arbitrary_strings_never_raise(env_id, text):
    env = pettingllms.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.reset(seed=0)
    for _ in range(2):
        agent = env.agent_selection
        env.step(text)
        assert {"reward_team", "reward_local", "turn", "success"} <= set(env.infos[agent])
        assert env.observation_space(env.agent_selection).contains(env.observe(env.agent_selection))


@pytest.mark.parametrize("env_id", sorted(pettingllms.registry))
def test_info_turn_is_the_turn_the_observations_show(env_id):
    """`infos[a]["turn"]` is the 1-based turn the next observation reads ("turn 2 of 4"), `step_turn` the 0-based
    turn of the step that was just played."""
    env = pettingllms.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.reset(seed=0)
    assert (env.infos[env.agent_selection]["turn"], env.infos[env.agent_selection]["step_turn"]) == (1, 0)
    steps, shown = 0, 0
    while env.agents and steps < 12:
        acting_turn, agent = env.unwrapped.turn, env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)  # the episode is over: PettingZoo removes the agent, no info changes
            continue
        env.step("no answer")
        steps += 1
        for agent in env.agents:
            info = env.infos[agent]
            assert info["turn"] == env.unwrapped.display_turn and info["step_turn"] == acting_turn
            match = re.search(r"\b[Tt]urn (\d+) of \d+", env.observe(agent))
            if match:
                shown += 1
                assert int(match.group(1)) == info["turn"], (agent, env.observe(agent))
    assert shown or env_id in ("bargain-v0",), "no observation states its turn"


def test_parse_errors_are_told_apart_from_partly_usable_answers():
    env = pettingllms.make("plan-path-v0")
    env.reset(seed=0)
    env.step("no answer at all")
    assert env.infos["tool"]["parse_error"] is True and "no <answer>" in env.infos["tool"]["error"]
    assert env.infos["tool"]["program"] == "absent"  # a direct answer, even an unusable one, is no program
    env.step("<answer>U U U U U U U U U U</answer>")  # usable moves, some blocked by the edge
    assert env.infos["plan"]["parse_error"] is False and "could not be applied" in env.infos["plan"]["error"]


def test_a_per_turn_move_cap_makes_the_walk_span_turns():
    from pettingllms.testing.returns import check_returns, oracle, play_returns

    make = functools.partial(pettingllms.make, "plan-path-v0", size=7, max_moves_per_turn=3, max_turns=6)
    env = make()
    env.reset(seed=2)
    path = env.unwrapped.solution_actions()
    assert len(path) > 3
    assert not env.unwrapped.solves(path)  # more than a turn's moves: not solved this turn
    assert "Only the first 3 actions of an answer are carried out each turn." in env.observe("tool")
    env.step(env.unwrapped.solution())  # the tool proposes the whole path
    env.step(env.unwrapped.solution())  # the plan agent answers it: 3 moves are made
    assert "(only the first 3 were carried out)" in env.observe("tool") and not env.unwrapped.success
    assert env.infos["plan"]["reward_local"] == pytest.approx(
        3 / len(path)
    )  # potential: 1 - distance / start
    returns = play_returns(make, {"tool": oracle, "plan": oracle}, seed=2)
    assert returns["plan"] == pytest.approx(2.0)  # all the progress and the success, over ceil(len / 3) turns
    check_returns(make, seeds=(0, 1))
    with pytest.raises(pettingllms.ConfigError, match="max_moves_per_turn=0 must be an integer >= 1"):
        pettingllms.make("plan-path-v0", max_moves_per_turn=0)
