"""Tests for the Sokoban rules, XSB I/O, rendering, solver and generator."""

from collections import deque

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pettingllms.envs.sokoban.board import (
    MOVES,
    Layout,
    LevelFormatError,
    SokobanState,
    parse_xsb,
    render_ansi,
    render_rgb,
    to_xsb,
)
from pettingllms.envs.sokoban.generator import GenerationError, generate
from pettingllms.envs.sokoban.solver import SolverLimitError, solve

# Microban level 1 (David W. Skinner); the others are hand-written.
MICROBAN_1 = """\
####
# .#
#  ###
#*@  #
#  $ #
#  ###
####"""

PILLAR = """\
######
#    #
# #@ #
# $* #
# .* #
#    #
######"""

RAGGED = """\
  ####
###  ####
#     $ #
# #  #$ #
# . .#@ #
#########"""

TURN = """\
######
#   .#
# $  #
# @  #
######"""

CLASSIC_LEVELS = [MICROBAN_1, PILLAR, RAGGED, TURN]


def replay(state: SokobanState, moves: list[str]) -> SokobanState:
    """A copy of ``state`` after ``moves``; fails if any move is blocked."""
    state = state.copy()
    for move in moves:
        assert state.move(move) != "blocked", (to_xsb(state), move)
    return state


def reference_solution_length(state: SokobanState) -> int | None:
    """Optimal solution length by plain BFS over SokobanState.move (no pruning)."""
    seen = {state.key()}
    queue = deque([(state, 0)])
    while queue:
        current, depth = queue.popleft()
        if current.is_solved():
            return depth
        for direction in MOVES:
            nxt = current.copy()
            if nxt.move(direction) != "blocked" and nxt.key() not in seen:
                seen.add(nxt.key())
                queue.append((nxt, depth + 1))
    return None


# --- XSB parsing and rendering ---------------------------------------------


@pytest.mark.parametrize("text", CLASSIC_LEVELS)
def test_xsb_round_trip_classic_levels(text):
    state = parse_xsb(text)
    assert to_xsb(state) == text
    assert parse_xsb(to_xsb(state)).key() == state.key()


def test_parse_cells_and_glyphs():
    state = parse_xsb("#####\n#+$.#\n#* $#\n#####")
    assert (state.layout.width, state.layout.height) == (5, 4)
    assert state.player == 6
    assert state.boxes == {7, 11, 13}
    assert state.layout.goals == {6, 8, 11}
    assert 0 in state.layout.walls and 12 not in state.layout.walls


def test_parse_ignores_blank_edges_trailing_floor_and_alternative_floor_glyphs():
    plain = parse_xsb("#####\n#@$.#\n#   #\n#####")
    messy = parse_xsb("\n  \r\n#####  \r\n#@$.#\r\n#-_-#--\r\n#####\n\n\n")
    assert messy.key() == plain.key()


def test_ragged_rows_padding_is_outside():
    state = parse_xsb(MICROBAN_1)
    assert state.layout.width == 6
    # Cell past the end of row 0 is not a wall but must be unreachable.
    assert 5 not in state.layout.walls
    assert render_ansi(state).split("\n")[0] == "####  "


@pytest.mark.parametrize(
    "text, fragment, line, column",
    [
        ("#####\n#@$.#\n#x  #\n#####", "unknown character 'x'", 3, 2),
        ("#####\n#@$.#\n#\t  #\n#####", "unknown character '\\t'", 3, 2),
        ("\n#####\n#@$.#\n# @ #\n#####", "second player '@' (first at line 3, column 2)", 4, 3),
        ("#####\n#+$.#\n#  +#\n#####", "second player '+'", 3, 4),
        ("#####\n# $.#\n#####", "no player", None, None),
        ("#####\n#@ .#\n#####", "no boxes", None, None),
        ("######\n#@$..#\n######", "1 boxes but 2 goals", None, None),
        ("#####\n#@$$#\n#.  #\n#####", "2 boxes but 1 goals", None, None),
        ("#####\n#@$. \n#####", "not enclosed", 2, 4),
        ("#####\n#@$.#\n#  \n#####", "not enclosed", 2, 2),
        ("###  \n#@$.#\n#####", "not enclosed", 2, 4),
        ("#####\n#@$.#\n# ###\n#   #\n## ##", "not enclosed", 5, 3),
        ("", "empty", None, None),
        ("\n  \n", "empty", None, None),
    ],
)
def test_parse_errors(text, fragment, line, column):
    with pytest.raises(LevelFormatError) as info:
        parse_xsb(text)
    message = str(info.value)
    assert fragment in message
    assert (info.value.line, info.value.column) == (line, column)
    if line is not None:
        assert message.startswith(f"line {line}, column {column}: ")
    assert isinstance(info.value, ValueError)


def test_box_in_closed_side_room_is_allowed():
    # The box's region is enclosed even though the player cannot reach it.
    assert solve(parse_xsb("#######\n#@ #* #\n#######")) == []
    assert solve(parse_xsb("#######\n#@.#$ #\n#######")) is None


def test_render_ansi_is_full_width_grid():
    state = parse_xsb(RAGGED)
    rows = render_ansi(state).split("\n")
    assert len(rows) == state.layout.height
    assert {len(row) for row in rows} == {state.layout.width}
    assert [row.rstrip() for row in rows] == RAGGED.split("\n")


def test_render_rgb_shape_dtype_and_colours():
    state = parse_xsb("#####\n#@$.#\n# * #\n#####")
    image = render_rgb(state, cell_px=4)
    assert image.shape == (4 * 4, 5 * 4, 3)
    assert image.dtype == np.uint8

    def colour(cell):
        row, col = divmod(cell, state.layout.width)
        return tuple(image[row * 4, col * 4])

    wall, player, box, goal, box_on_goal, floor = 0, 6, 7, 8, 12, 11
    colours = {colour(c) for c in (wall, player, box, goal, box_on_goal, floor)}
    assert len(colours) == 6
    assert render_rgb(state).shape == (4 * 16, 5 * 16, 3)
    with pytest.raises(ValueError):
        render_rgb(state, cell_px=0)


def test_render_rgb_player_on_goal_and_outside_have_own_colours():
    state = parse_xsb(RAGGED)
    image = render_rgb(state, cell_px=1)
    outside = tuple(image[0, 0])
    floor = tuple(image[2, 1])
    player = tuple(image[4, 6])
    state.player = 4 * state.layout.width + 2  # onto a goal
    on_goal = tuple(render_rgb(state, cell_px=1)[4, 2])
    assert len({outside, floor, player, on_goal}) == 4


# --- state and moves ----------------------------------------------------------


def test_moves_mapping():
    assert dict(MOVES) == {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
    with pytest.raises(TypeError):
        MOVES["X"] = (0, 0)


def test_move_step_push_and_solve():
    state = parse_xsb("######\n#@ $.#\n######")
    assert state.move("R") == "moved"
    assert state.player == 8
    assert not state.is_solved()
    assert state.move("R") == "pushed"
    assert (state.player, state.boxes) == (9, {10})
    assert state.is_solved()
    assert state.boxes_on_goals() == 1


def test_move_blocked_by_wall_leaves_state_unchanged():
    state = parse_xsb("#####\n#@$.#\n#####")
    before = state.key()
    assert state.move("U") == "blocked"
    assert state.move("L") == "blocked"
    assert state.key() == before


def test_push_blocked_by_wall_and_by_box():
    against_wall = parse_xsb("#####\n#.@$#\n#####")
    assert against_wall.move("R") == "blocked"
    against_box = parse_xsb("######\n#@$$.#\n#   .#\n######")
    before = against_box.key()
    assert against_box.move("R") == "blocked"
    assert against_box.key() == before


def test_move_off_grid_is_blocked_and_unknown_direction_rejected():
    layout = Layout(3, 1, frozenset(), frozenset({2}))
    state = SokobanState(layout, 0, frozenset({1}))
    assert state.move("L") == "blocked"
    assert state.move("U") == "blocked"
    assert state.move("R") == "pushed"
    assert state.is_solved()
    assert state.move("R") == "blocked"
    with pytest.raises(ValueError, match="unknown direction"):
        state.move("X")


def test_state_invariants_checked():
    layout = Layout(3, 3, frozenset({0}), frozenset({8}))
    with pytest.raises(ValueError):
        SokobanState(layout, 0, frozenset({4}))  # player on a wall
    with pytest.raises(ValueError):
        SokobanState(layout, 4, frozenset({4}))  # player on a box
    with pytest.raises(ValueError):
        SokobanState(layout, 9, frozenset())  # off the grid
    with pytest.raises(ValueError):
        Layout(3, 3, frozenset({1}), frozenset({1}))  # goal on a wall


def test_copy_is_independent_and_shares_layout():
    state = parse_xsb("######\n#@$ .#\n######")
    clone = state.copy()
    assert clone.layout is state.layout
    clone.move("R")
    assert clone.key() != state.key()
    assert state.player == 7 and state.boxes == {8}


def test_box_distance_and_boxes_on_goals():
    state = parse_xsb("#######\n#@$  .#\n#    *#\n#######")
    assert state.boxes_on_goals() == 1
    assert state.box_distance() == 3  # (1,2) -> nearest goal (1,5); the box on a goal adds 0
    state.move("R")
    assert state.box_distance() == 2
    solved = replay(state, ["R", "R"])
    assert solved.is_solved() and solved.box_distance() == 0


def test_key_is_hashable_and_canonical():
    a = parse_xsb(PILLAR)
    b = parse_xsb(PILLAR)
    assert a.key() == b.key() and hash(a.key()) == hash(b.key())
    assert repr(a.key()) == repr(b.key())
    b.move("R")
    assert a.key() != b.key()


# --- solver -------------------------------------------------------------------


@pytest.mark.parametrize("length", [1, 2, 5, 9])
def test_corridor_push_needs_exactly_n_moves(length):
    state = parse_xsb("#" * (length + 4) + "\n#@$" + " " * (length - 1) + ".#\n" + "#" * (length + 4))
    assert solve(state) == ["R"] * length


def test_turning_level_optimal_length():
    # Push up once, walk round (2 moves), push right twice: 5; nothing shorter.
    state = parse_xsb(TURN)
    solution = solve(state)
    assert len(solution) == 5
    assert replay(state, solution).is_solved()


def test_walk_round_then_push():
    # Up, right (walk round to above the box), down (push): 3 moves.
    state = parse_xsb("#####\n#   #\n#@$ #\n# . #\n#####")
    assert solve(state) == ["U", "R", "D"]


@pytest.mark.parametrize("text", CLASSIC_LEVELS)
def test_solver_matches_reference_bfs_on_classic_levels(text):
    state = parse_xsb(text)
    solution = solve(state)
    assert solution is not None
    assert len(solution) == reference_solution_length(state)
    assert replay(state, solution).is_solved()


def test_already_solved_returns_empty():
    assert solve(parse_xsb("####\n#@*#\n####")) == []


@pytest.mark.parametrize(
    "text",
    [
        "#####\n#$ .#\n# @ #\n#####",  # box in a corner (dead cell)
        "#######\n#.$$ .#\n#  @  #\n#######",  # two boxes frozen against the wall
        "#######\n#@ #$.#\n#.$#  #\n#######",  # box unreachable by the player
    ],
)
def test_unsolvable_levels_return_none(text):
    state = parse_xsb(text)
    assert solve(state) is None
    assert reference_solution_length(state) is None


def test_solver_limit():
    with pytest.raises(SolverLimitError):
        solve(parse_xsb(RAGGED), max_states=5)
    assert solve(parse_xsb(RAGGED), max_states=100_000) is not None


# --- generator ------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    width=st.integers(5, 8),
    height=st.integers(5, 8),
    num_boxes=st.integers(1, 3),
)
def test_generated_levels_are_solvable_with_optimal_solution(seed, width, height, num_boxes):
    minimum = 1 if width * height < 36 and num_boxes == 3 else 4
    state, solution = generate(
        np.random.default_rng(seed),
        width=width,
        height=height,
        num_boxes=num_boxes,
        min_solution_length=minimum,
    )
    assert (state.layout.width, state.layout.height) == (width, height)
    assert len(state.boxes) == len(state.layout.goals) == num_boxes
    assert not state.is_solved()
    assert len(solution) >= minimum
    assert replay(state, solution).is_solved()
    oracle = solve(state)
    assert oracle is not None and len(oracle) == len(solution)
    assert parse_xsb(to_xsb(state)).key() == state.key()


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(5, 6),
    num_boxes=st.integers(1, 2),
    walk=st.lists(st.sampled_from("UDLR"), max_size=40),
)
def test_solver_matches_reference_bfs_after_random_moves(seed, size, num_boxes, walk):
    """Random walks from generated levels reach solvable and deadlocked positions."""
    state, _ = generate(
        np.random.default_rng(seed), width=size, height=size, num_boxes=num_boxes, min_solution_length=1
    )
    for move in walk:
        state.move(move)
    solution = solve(state)
    expected = reference_solution_length(state)
    assert (None if solution is None else len(solution)) == expected
    if solution is not None:
        assert replay(state, solution).is_solved()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_solver_matches_reference_on_random_placements(seed, data):
    """Random player/box placements on generated rooms (mostly unsolvable)."""
    room, _ = generate(np.random.default_rng(seed), width=6, height=6, num_boxes=2, min_solution_length=1)
    floor = sorted(set(range(36)) - room.layout.walls)
    cells = data.draw(st.lists(st.sampled_from(floor), min_size=3, max_size=3, unique=True))
    state = SokobanState(room.layout, cells[0], frozenset(cells[1:]))
    solution = solve(state)
    assert (None if solution is None else len(solution)) == reference_solution_length(state)


def test_generator_is_deterministic_per_seed():
    a_state, a_solution = generate(np.random.default_rng(1234))
    b_state, b_solution = generate(np.random.default_rng(1234))
    assert a_state.key() == b_state.key() and a_solution == b_solution
    rng = np.random.default_rng(7)
    first = generate(rng)[0].key()
    second = generate(rng)[0].key()
    assert first != second  # the generator advances the rng


def test_different_seeds_give_different_levels():
    keys = {generate(np.random.default_rng(seed))[0].key() for seed in range(100)}
    assert len(keys) >= 98


def test_default_levels_are_non_trivial():
    lengths = [len(generate(np.random.default_rng(seed))[1]) for seed in range(100)]
    assert min(lengths) >= 10
    assert np.mean(lengths) >= 10


def test_generator_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(GenerationError):
        generate(rng, width=5, height=5, num_boxes=1, min_solution_length=500, max_attempts=3)
    with pytest.raises(ValueError):
        generate(rng, width=3, height=3, num_boxes=1)
    with pytest.raises(ValueError):
        generate(rng, width=2, height=7)
    with pytest.raises(ValueError):
        generate(rng, num_boxes=0)
    with pytest.raises(ValueError):
        generate(rng, max_attempts=0)


def test_render_and_moves_equal_a_cell_by_cell_reading_on_generated_levels():
    """`render_ansi` (a template of the empty level) and `move` (a per-layout neighbour table) against the
    rules read cell by cell, over generated levels and random walks."""

    def rendered(state):
        layout = state.layout
        rows = []
        for row in range(layout.height):
            line = ""
            for cell in range(row * layout.width, (row + 1) * layout.width):
                goal = cell in layout.goals
                if cell in layout.walls:
                    line += "#"
                elif cell == state.player:
                    line += "+" if goal else "@"
                elif cell in state.boxes:
                    line += "*" if goal else "$"
                else:
                    line += "." if goal else " "
            rows.append(line)
        return "\n".join(rows)

    def neighbour(layout, cell, direction):
        row, col = divmod(cell, layout.width)
        drow, dcol = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}[direction]
        row, col = row + drow, col + dcol
        inside = 0 <= row < layout.height and 0 <= col < layout.width
        return row * layout.width + col if inside and row * layout.width + col not in layout.walls else None

    rng = np.random.default_rng(0)
    for _ in range(30):
        state, _ = generate(rng, width=7, height=7, num_boxes=2, min_solution_length=5)
        layout = state.layout
        for cell in range(layout.width * layout.height):
            for direction in "UDLR":
                assert layout.neighbour(cell, direction) == neighbour(layout, cell, direction)
        for direction in rng.choice(list("UDLR"), size=40):
            assert render_ansi(state) == rendered(state)
            before = state.copy()
            target = neighbour(layout, state.player, direction)
            beyond = None if target is None else neighbour(layout, target, direction)
            pushes = target is not None and target in before.boxes
            blocked = target is None or (pushes and (beyond is None or beyond in before.boxes))
            outcome = state.move(str(direction))
            assert outcome == ("blocked" if blocked else "pushed" if pushes else "moved")
            if not blocked:
                assert state.player == target
                assert state.boxes == (before.boxes - {target}) | {beyond} if pushes else before.boxes
