#!/usr/bin/env bash
# Regenerate the README's screenshots of `pettingllms view`: a short real run of the default team with rollout
# dumps (docs/view_run.png: one instance's sampled tree) and a pettingllms-eval of it (docs/view_eval.png: one
# episode as a conversation), drawn by headless Chromium. After scripts/setup.sh --with-browser. Resumable: a
# finished run and evaluation are reused.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=runs/view_screenshot
EVAL="$RUN/eval.json"
.venv/bin/pettingllms-train --output_dir "$RUN" --dump_rollouts true --max_steps 3 --eval_episodes 50 \
  --eval_every 1 --resume true --disable_tqdm true
.venv/bin/pettingllms view "$RUN"
.venv/bin/pettingllms-eval --env plan-path-v0 --policy "$RUN" --episodes 20 --output "$EVAL" --no_progress
.venv/bin/pettingllms view "$EVAL"
BROWSER=$(command -v chromium || command -v google-chrome)
PROFILE=$(mktemp -d)
shot() {  # shot OUTPUT URL
  "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$PROFILE" \
    --window-size=1280,1500 --virtual-time-budget=10000 --screenshot="$1" "$2"
}
shot docs/view_run.png "file://$PWD/$RUN/view/index.html#step=3&instance=0"
shot docs/view_eval.png "file://$PWD/$EVAL.view/index.html#open=seed/0"
rm -rf "$PROFILE"
echo "wrote docs/view_run.png and docs/view_eval.png"
