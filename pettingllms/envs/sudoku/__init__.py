"""Sudoku, 4x4 and 9x9 (`sudoku-v0`)."""
