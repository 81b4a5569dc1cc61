"""Coding team: a coder and a tester (`code-v0`)."""
