"""Tests for pettingllms.envs.plan_path.grid (pure Plan-Path game logic)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pettingllms.envs.plan_path.grid import (
    MOVES,
    GridFormatError,
    GridMap,
    PathState,
    generate,
    parse_grid,
    render_ansi,
    render_rgb,
    shortest_path,
    to_text,
)


def test_moves_mapping():
    assert dict(MOVES) == {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
    assert list(MOVES) == ["U", "D", "L", "R"]
    with pytest.raises(TypeError):
        MOVES["X"] = (0, 0)  # type: ignore[index]


def test_parse_round_trip_and_fields():
    text = "#.S..\n#.##.\n....G"
    state = parse_grid(text)
    grid = state.grid
    assert (grid.width, grid.height) == (5, 3)
    assert grid.start == 2 and grid.goal == 14
    assert state.position == grid.start
    assert grid.walls == frozenset({0, 5, 7, 8})
    assert to_text(state) == text
    # Whitespace and blank lines are ignored; the map is identical.
    again = parse_grid("\n  #.S..  \n\n  #.##.\n  ....G\n")
    assert again.grid == grid and again.grid.key() == grid.key()
    assert hash(grid.key()) == hash(again.grid.key())
    # to_text ignores the position.
    state.move("R")
    assert to_text(state) == text


def test_render_ansi_tracks_position():
    state = parse_grid("S..\n.#.\n..G")
    assert render_ansi(state) == "@..\n.#.\n..G"
    assert state.move("R")
    assert render_ansi(state) == ".@.\n.#.\n..G"
    for d in ("R", "D", "D"):
        assert state.move(d)
    assert state.is_solved()
    assert render_ansi(state) == "...\n.#.\n..@"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty grid"),
        ("  \n\n", "empty grid"),
        ("S..\n..\n..G", "line 2: row has 2 cells, expected 3"),
        ("S..\n.x.\n..G", "line 2, col 2: unexpected character 'x'"),
        ("S.S\n...\n..G", "line 1, col 3: second 'S' (first at line 1, col 1)"),
        ("S.G\n...\n..G", "line 3, col 3: second 'G' (first at line 1, col 3)"),
        ("...\n...\n..G", "no 'S' (start)"),
        ("S..\n...\n...", "no 'G' (goal)"),
        ("S.#\n.#.\n#.G", "goal unreachable"),
    ],
)
def test_parse_errors(text, fragment):
    with pytest.raises(GridFormatError) as info:
        parse_grid(text)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_parse_error_line_numbers_count_blank_lines():
    with pytest.raises(GridFormatError, match=r"line 4, col 1: unexpected character '\?'"):
        parse_grid("\nS..\n\n?.G")


def test_move_semantics():
    state = parse_grid("S#.\n...\n.#G")
    assert not state.move("U")  # off the grid
    assert not state.move("L")  # off the grid
    assert not state.move("R")  # wall
    assert state.position == 0
    assert state.move("D") and state.position == 3
    assert not state.move("L") and state.position == 3
    assert state.move("R") and state.position == 4
    assert not state.move("D") and state.position == 4  # wall below
    assert state.move("R") and state.move("D")
    assert state.is_solved() and state.distance_to_goal() == 0
    assert not state.move("R")  # off the grid on the right edge
    with pytest.raises(ValueError, match="unknown direction"):
        state.move("north")


def test_copy_is_independent_and_shares_map():
    state = parse_grid("S..\n...\n..G")
    other = state.copy()
    assert other.grid is state.grid
    other.move("R")
    assert state.position == 0 and other.position == 1


def test_hand_made_maze_shortest_path():
    # A serpentine maze: the shortest route has a known length of 22.
    text = "\n".join(
        [
            "S....",
            "####.",
            ".....",
            ".####",
            ".....",
            "####.",
            "G....",
        ]
    )
    state = parse_grid(text)
    path = shortest_path(state)
    assert path == ["R"] * 4 + ["D"] * 2 + ["L"] * 4 + ["D"] * 2 + ["R"] * 4 + ["D"] * 2 + ["L"] * 4
    assert len(path) == 22 == state.distance_to_goal()
    replay = state.copy()
    for step in path:
        assert replay.move(step)
    assert replay.is_solved()
    # From a midpoint the path is the remaining suffix.
    for step in path[:9]:
        state.move(step)
    assert shortest_path(state) == path[9:]


def test_shortest_path_tie_break_and_alternatives():
    # Open 3x3 with a wall in the middle: two optimal routes of length 4.
    state = parse_grid("S..\n.#.\n..G")
    assert shortest_path(state) == ["D", "D", "R", "R"]  # D before R
    state = parse_grid("..G\n.#.\nS..")
    assert shortest_path(state) == ["U", "U", "R", "R"]  # U before R
    # A shortcut beats a long detour.
    state = parse_grid("S.....\n.####.\n.....G")
    assert shortest_path(state) == ["D", "D", "R", "R", "R", "R", "R"]
    on_goal = parse_grid("SG")
    on_goal.move("R")
    assert shortest_path(on_goal) == []


def test_unreachable_goal_via_gridmap():
    # GridMap itself allows an unreachable goal; distances and shortest_path report it.
    grid = GridMap(3, 3, frozenset({5, 7}), start=0, goal=8)
    state = PathState(grid, grid.start)
    assert grid.distances_to_goal()[0] == -1
    assert state.distance_to_goal() == -1
    assert shortest_path(state) is None
    assert grid.distances_to_goal() is grid.distances_to_goal()  # cached


def test_distances_to_goal_values():
    grid = parse_grid("S#.\n...\n.#G").grid
    assert grid.distances_to_goal() == (4, -1, 2, 3, 2, 1, 4, -1, 0)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        (dict(width=0, height=3, walls=frozenset(), start=0, goal=1), "width and height"),
        (dict(width=2, height=2, walls=frozenset({4}), start=0, goal=1), "wall index"),
        (dict(width=2, height=2, walls=frozenset(), start=4, goal=1), "start=4 out of range"),
        (dict(width=2, height=2, walls=frozenset({1}), start=0, goal=1), "goal=1 is a wall"),
        (dict(width=2, height=2, walls=frozenset(), start=1, goal=1), "must differ"),
    ],
)
def test_gridmap_validation(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        GridMap(**kwargs)


def test_pathstate_validation():
    grid = GridMap(2, 2, frozenset({3}), start=0, goal=1)
    with pytest.raises(ValueError, match="not a free cell"):
        PathState(grid, 3)
    with pytest.raises(ValueError, match="not a free cell"):
        PathState(grid, 4)


def test_gridmap_is_immutable_and_hashable():
    grid = parse_grid("S.\n.G").grid
    with pytest.raises(AttributeError):
        grid.start = 1  # type: ignore[misc]
    assert {grid: 1}[parse_grid("S.\n.G").grid] == 1


def test_render_rgb():
    state = parse_grid("S#.\n...\n.#G")
    image = render_rgb(state)
    assert image.shape == (3 * 16, 3 * 16, 3) and image.dtype == np.uint8
    assert tuple(image[0, 16 + 8]) == (64, 64, 64)  # wall
    assert tuple(image[2 * 16, 2 * 16]) == (80, 200, 80)  # goal corner
    assert tuple(image[8, 8]) == (220, 50, 50)  # agent at start
    assert tuple(image[0, 0]) == (200, 200, 255)  # start corner, outside the agent inset
    small = render_rgb(state, cell_px=1)
    assert small.shape == (3, 3, 3) and small.dtype == np.uint8
    with pytest.raises(ValueError, match="cell_px"):
        render_rgb(state, cell_px=0)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    width=st.integers(3, 9),
    height=st.integers(3, 9),
    density=st.sampled_from([0.0, 0.1, 0.2, 0.3]),
)
def test_generated_instances_are_solvable(seed, width, height, density):
    state = generate(np.random.default_rng(seed), width=width, height=height, obstacle_density=density)
    grid = state.grid
    n = width * height
    assert (grid.width, grid.height) == (width, height)
    assert len(grid.walls) == round(density * n)
    assert grid.start not in grid.walls and grid.goal not in grid.walls
    assert state.position == grid.start
    min_distance = max(2, (width + height) // 2)
    assert state.distance_to_goal() >= min_distance
    path = shortest_path(state)
    assert path is not None and len(path) == state.distance_to_goal()
    for step in path:
        assert state.move(step)
    assert state.is_solved()
    # The text form round-trips.
    assert parse_grid(to_text(state)).grid == grid


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), min_distance=st.integers(1, 10))
def test_generate_respects_min_distance(seed, min_distance):
    state = generate(np.random.default_rng(seed), width=6, height=6, min_distance=min_distance)
    assert state.distance_to_goal() >= min_distance


@pytest.mark.parametrize(("width", "height"), [(5, 5), (8, 8), (4, 7)])
def test_same_seed_same_instance_different_seeds_differ(width, height):
    def key(seed):
        return generate(np.random.default_rng(seed), width=width, height=height).grid.key()

    assert key(123) == key(123)
    keys = {key(seed) for seed in range(50)}
    assert len(keys) >= 45


def test_generate_uses_only_passed_generator():
    rng = np.random.default_rng(7)
    a = generate(rng).grid
    b = generate(rng).grid
    rng2 = np.random.default_rng(7)
    assert generate(rng2).grid == a and generate(rng2).grid == b


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        (dict(width=0), "width=0"),
        (dict(obstacle_density=1.0), "obstacle_density"),
        (dict(obstacle_density=-0.1), "obstacle_density"),
        (dict(width=1, height=2, obstacle_density=0.5), "need at least 2"),
        (dict(min_distance=0), "min_distance"),
        (dict(width=3, height=3, min_distance=9), "min_distance=9 impossible"),
        (dict(max_attempts=0), "max_attempts"),
        # 20 free cells, a path through all of them: not found in 3 attempts.
        (dict(width=5, height=5, min_distance=19, max_attempts=3), "max_attempts=3"),
    ],
)
def test_generate_errors(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        generate(np.random.default_rng(0), **kwargs)
