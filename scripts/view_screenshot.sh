#!/usr/bin/env bash
# Regenerate docs/view_screenshot.png: a short real run of the default team with rollout dumps, its
# `pettingllms view` page, and headless Chromium's screenshot of one instance's tree. After scripts/setup.sh
# --with-browser (chromium). Resumable: the run is reused when it has finished.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=runs/view_screenshot
.venv/bin/pettingllms-train --output_dir "$RUN" --dump_rollouts true --max_steps 3 --eval_episodes 50 \
  --eval_every 1 --resume true --disable_tqdm true
.venv/bin/pettingllms view "$RUN"
BROWSER=$(command -v chromium || command -v google-chrome)
PROFILE=$(mktemp -d)
"$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$PROFILE" \
  --window-size=1280,1500 --virtual-time-budget=10000 --screenshot=docs/view_screenshot.png \
  "file://$PWD/$RUN/view/index.html#step=3&instance=0"
rm -rf "$PROFILE"
echo "wrote docs/view_screenshot.png"
