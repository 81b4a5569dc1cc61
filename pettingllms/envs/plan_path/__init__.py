"""Plan-Path: walk from your position @ to the goal G around walls (`plan-path-v0`)."""
