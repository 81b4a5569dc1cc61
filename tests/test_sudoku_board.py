"""Tests for pettingllms.envs.sudoku.board (pure Sudoku game logic)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pettingllms.envs.sudoku.board import (
    PuzzleFormatError,
    SudokuPuzzle,
    SudokuState,
    count_solutions,
    generate,
    parse_puzzle,
    render_ansi,
    render_rgb,
    solve,
    to_text,
)

# Classic 9x9 puzzle (Wikipedia "Sudoku") and its unique solution.
CLASSIC = "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79"
CLASSIC_SOLUTION = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
# A hard 9x9 puzzle (needs real search) and its unique solution.
HARD = "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4.."
HARD_SOLUTION = "812753649943682175675491283154237896369845721287169534521974368438526917796318452"

SMALL = "1...\n.4.2\n2.4.\n...1"
SMALL_SOLUTION = "1234341221434321"


def digits(s: str) -> tuple[int, ...]:
    return tuple(0 if ch == "." else int(ch) for ch in s)


def rows_of(s: str, size: int) -> str:
    return "\n".join(s[i : i + size] for i in range(0, size * size, size))


# --- parsing and text -------------------------------------------------------------------------


def test_parse_round_trip_4x4():
    state = parse_puzzle(SMALL)
    puzzle = state.puzzle
    assert puzzle.size == 4
    assert puzzle.givens == digits(SMALL.replace("\n", ""))
    assert puzzle.solution == digits(SMALL_SOLUTION)
    assert state.cells == list(puzzle.givens)
    assert to_text(state) == SMALL
    assert parse_puzzle(to_text(state)).puzzle == puzzle


def test_parse_round_trip_9x9_and_separators():
    state = parse_puzzle(CLASSIC)
    assert state.puzzle.size == 9
    assert state.puzzle.solution == digits(CLASSIC_SOLUTION)
    text = to_text(state)
    assert text == rows_of(CLASSIC, 9)
    assert parse_puzzle(text).puzzle == state.puzzle
    # Zeros as blanks and '|', '-', '+' separators are accepted.
    fancy = "\n".join(
        ["+-----+-----+", "| 1 0 | 0 0 |", "| 0 4 | 0 2 |", "+-----+-----+", "| 2 0 | 4 0 |", "| 0 0 | 0 1 |"]
    )
    assert parse_puzzle(fancy).puzzle == parse_puzzle(SMALL).puzzle


def test_key_is_hashable_identity():
    a = parse_puzzle(SMALL).puzzle
    b = parse_puzzle(SMALL.replace(".", "0")).puzzle
    assert a.key() == b.key() and hash(a.key()) == hash(b.key())
    assert a.key() != parse_puzzle(CLASSIC).puzzle.key()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1..4\n.4x.\n.14.\n4..1", "line 2, col 3: unexpected character 'x'"),
        ("1..4.41..14.4..", "expected 16 or 81 cells, got 15"),
        ("", "expected 16 or 81 cells, got 0"),
        (CLASSIC + "1", "expected 16 or 81 cells, got 82"),
        ("1..5\n.41.\n.14.\n4..1", "row 1, col 4: value 5 out of range 1..4"),
        ("1..1\n....\n....\n....", "conflict: value 1 at row 1, col 1"),
        ("1...\n....\n1...\n....", "conflict"),  # column
        ("1...\n.1..\n....\n....", "conflict"),  # box
        ("12..\n....\n..3.\n..4.", "no solution"),  # (1,3) has no candidate, no direct conflict
        ("....\n....\n....\n....", "multiple solutions"),
        (CLASSIC[:-2] + "..", "multiple solutions"),
    ],
)
def test_parse_errors(text, fragment):
    with pytest.raises(PuzzleFormatError) as info:
        parse_puzzle(text)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_render_ansi_4x4():
    state = parse_puzzle(SMALL)
    expected = "\n".join(
        [
            "    1 2 | 3 4",
            "  +-----+-----+",
            "1 | 1 . | . . |",
            "2 | . 4 | . 2 |",
            "  +-----+-----+",
            "3 | 2 . | 4 . |",
            "4 | . . | . 1 |",
            "  +-----+-----+",
        ]
    )
    assert render_ansi(state) == expected


def test_render_ansi_9x9_layout():
    lines = render_ansi(parse_puzzle(CLASSIC)).split("\n")
    assert lines[0] == "    1 2 3 | 4 5 6 | 7 8 9"
    assert lines[1] == "  +-------+-------+-------+"
    assert lines[2] == "1 | 5 3 . | . 7 . | . . . |"
    assert lines[-2] == "9 | . . . | . 8 . | . 7 9 |"
    assert len(lines) == 2 + 9 + 3
    assert len({len(line) for line in lines[1:]}) == 1


def test_render_rgb():
    state = parse_puzzle(SMALL)
    image = render_rgb(state)
    assert image.shape == (64, 64, 3) and image.dtype == np.uint8
    before = image.copy()
    assert state.place(0, 1, 2) == "placed"
    after = render_rgb(state)
    assert not np.array_equal(before[:16, 16:32], after[:16, 16:32])  # the new digit is drawn
    assert np.array_equal(before[16:, :], after[16:, :])
    big = render_rgb(parse_puzzle(CLASSIC), cell_px=20)
    assert big.shape == (180, 180, 3) and big.dtype == np.uint8
    tiny = render_rgb(state, cell_px=3)  # too small for digits: colours and lines only
    assert tiny.shape == (12, 12, 3)
    with pytest.raises(ValueError, match="cell_px"):
        render_rgb(state, cell_px=0)


# --- state semantics --------------------------------------------------------------------------


def test_place_semantics():
    state = parse_puzzle(SMALL)  # 1... / .4.2 / 2.4. / ...1
    snapshot = list(state.cells)
    assert state.place(-1, 0, 1) == "out_of_range"
    assert state.place(0, 4, 1) == "out_of_range"
    assert state.place(0, 1, 5) == "out_of_range"
    assert state.place(0, 1, -1) == "out_of_range"
    assert state.place(0, 0, 2) == "given"
    assert state.place(0, 0, 0) == "given"
    assert state.place(3, 1, 1) == "conflict"  # row only
    assert state.place(3, 1, 4) == "conflict"  # column only
    assert state.place(3, 1, 2) == "conflict"  # box only
    assert state.cells == snapshot
    assert state.place(0, 1, 3) == "placed"  # wrong value (solution is 2), but no conflict
    assert state.cells[1] == 3
    assert state.place(0, 1, 3) == "placed"  # the cell itself is excluded from the conflict check
    assert state.place(0, 1, 2) == "placed"  # overwrite
    assert state.cells[1] == 2
    assert state.place(0, 2, 2) == "conflict"  # conflicts with the placed value
    assert state.place(0, 1, 0) == "cleared"
    assert state.cells[1] == 0
    assert state.place(0, 1, 0) == "cleared"  # clearing a blank is fine
    assert state.cells == snapshot


def test_solved_and_counters():
    state = parse_puzzle(SMALL)
    solution = state.puzzle.solution
    assert state.blanks_total() == 10
    assert state.correct_cells() == 0 and not state.is_solved()
    blanks = [i for i, g in enumerate(state.puzzle.givens) if not g]
    for n, i in enumerate(blanks, start=1):
        assert state.place(i // 4, i % 4, solution[i]) == "placed"
        assert state.correct_cells() == n
        assert state.is_solved() == (n == len(blanks))
    assert state.cells == list(solution)
    assert state.blanks_total() == 10


def test_is_solved_requires_validity():
    state = parse_puzzle(SMALL)
    state.cells[:] = [1, 2, 3, 4] * 4  # full but invalid (written directly, bypassing place)
    assert not state.is_solved()


def test_copy_is_independent():
    state = parse_puzzle(SMALL)
    other = state.copy()
    assert other.puzzle is state.puzzle
    other.place(0, 1, 2)
    assert state.cells[1] == 0 and other.cells[1] == 2


def test_puzzle_and_state_validation():
    sol = digits(SMALL_SOLUTION)
    with pytest.raises(ValueError, match="size"):
        SudokuPuzzle(5, sol, sol)
    with pytest.raises(ValueError, match="solution is not a complete valid grid"):
        SudokuPuzzle(4, sol, (1, 2, 3, 4) * 4)
    with pytest.raises(ValueError, match="givens disagree"):
        SudokuPuzzle(4, (2,) + (0,) * 15, sol)
    with pytest.raises(ValueError, match="expected 16 cells"):
        SudokuPuzzle(4, (0,) * 15, sol)
    puzzle = SudokuPuzzle(4, [1] + [0] * 15, list(sol))  # sequences are coerced to tuples
    assert puzzle.givens == (1,) + (0,) * 15 and isinstance(puzzle.solution, tuple)
    with pytest.raises(ValueError, match="keep every given"):
        SudokuState(puzzle, [0] * 16)
    with pytest.raises(ValueError, match="expected 16 cells"):
        SudokuState(puzzle, [1] + [0] * 14)
    with pytest.raises(AttributeError):
        puzzle.size = 9  # type: ignore[misc]


# --- solver -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("puzzle", "solution", "size"),
    [(SMALL.replace("\n", ""), SMALL_SOLUTION, 4), (CLASSIC, CLASSIC_SOLUTION, 9), (HARD, HARD_SOLUTION, 9)],
)
def test_solve_known_puzzles(puzzle, solution, size):
    assert solve(digits(puzzle), size) == digits(solution)
    assert count_solutions(digits(puzzle), size) == 1
    assert solve(list(digits(solution)), size) == digits(solution)  # already solved


def test_count_solutions():
    # There are exactly 288 4x4 Sudoku grids.
    assert count_solutions([0] * 16, 4, limit=1000) == 288
    assert count_solutions([0] * 16, 4) == 2
    assert count_solutions([0] * 16, 4, limit=1) == 1
    assert count_solutions(digits("12..\n....\n..3.\n..4.".replace("\n", "")), 4) == 0
    assert count_solutions([1, 1] + [0] * 14, 4) == 0  # conflicting givens
    with pytest.raises(ValueError, match="limit"):
        count_solutions([0] * 16, 4, limit=0)


def test_solve_edge_cases():
    empty = solve([0] * 81, 9)
    assert empty is not None and count_solutions(empty, 9) == 1
    assert solve([0] * 81, 9) == empty  # deterministic
    assert solve([1, 1] + [0] * 14, 4) is None
    assert solve(digits("12..\n....\n..3.\n..4.".replace("\n", "")), 4) is None
    with pytest.raises(ValueError, match="size"):
        solve([0] * 25, 5)
    with pytest.raises(ValueError, match="expected 16 cells"):
        solve([0] * 15, 4)
    with pytest.raises(ValueError, match="out of range"):
        solve([5] + [0] * 15, 4)


# --- generation -------------------------------------------------------------------------------


def check_generated(state: SudokuState, size: int, blanks: int) -> None:
    puzzle = state.puzzle
    assert puzzle.size == size
    assert state.cells == list(puzzle.givens)
    assert puzzle.givens.count(0) == blanks == state.blanks_total()
    assert all(g == 0 or g == s for g, s in zip(puzzle.givens, puzzle.solution))
    assert count_solutions(puzzle.givens, size) == 1
    assert solve(puzzle.givens, size) == puzzle.solution
    assert not state.is_solved() or blanks == 0


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), blanks=st.integers(0, 12))
def test_generated_4x4_unique(seed, blanks):
    state = generate(np.random.default_rng(seed), size=4, blanks=blanks)
    check_generated(state, 4, blanks)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), blanks=st.integers(20, 55))
def test_generated_9x9_unique(seed, blanks):
    state = generate(np.random.default_rng(seed), size=9, blanks=blanks)
    check_generated(state, 9, blanks)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_generate_9x9_default(seed):
    state = generate(np.random.default_rng(seed), size=9)
    check_generated(state, 9, 45)


def test_generate_default_4x4():
    check_generated(generate(np.random.default_rng(0)), 4, 6)


@pytest.mark.parametrize("size", [4, 9])
def test_same_seed_same_instance_different_seeds_differ(size):
    def key(seed):
        return generate(np.random.default_rng(seed), size=size).puzzle.key()

    assert key(42) == key(42)
    n = 40 if size == 4 else 20
    keys = {key(seed) for seed in range(n)}
    assert len(keys) >= n - 2


def test_generate_uses_only_passed_generator():
    rng = np.random.default_rng(3)
    a, b = generate(rng).puzzle, generate(rng).puzzle
    rng2 = np.random.default_rng(3)
    assert (generate(rng2).puzzle, generate(rng2).puzzle) == (a, b)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        (dict(size=5), "size"),
        (dict(size=4, blanks=-1), "blanks=-1 out of range 0..12"),
        (dict(size=4, blanks=13), "blanks=13 out of range 0..12"),
        (dict(size=9, blanks=65), "blanks=65 out of range 0..64"),
        (dict(size=4, max_attempts=0), "max_attempts"),
        # 17 givens is the theoretical minimum; random digging never gets there.
        (dict(size=9, blanks=64, max_attempts=1), "blanks=64 not reached"),
    ],
)
def test_generate_errors(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        generate(np.random.default_rng(0), **kwargs)
