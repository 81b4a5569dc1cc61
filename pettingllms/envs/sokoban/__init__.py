"""Sokoban: push every box onto a goal (`sokoban-v0`)."""
