"""Plan-Path: walk from S to G around walls (`plan-path-v0`)."""
