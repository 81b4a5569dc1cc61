"""What people look at, built from `pettingllms-eval`'s results and a run's transcripts: `leaderboard`
(`pettingllms leaderboard RESULTS_DIR --out DIR`: tables, a page and figures) and `viewer` (`pettingllms view`:
one page per episode, drawn by `viewer_page`)."""
