#!/usr/bin/env bash
# Regenerate the committed leaderboard (leaderboard/): every baseline on the fixed evaluation suites, then the
# Markdown table, the HTML page and the plots. Resumable: finished episodes are cached beside each result.
#   bash scripts/leaderboard_baselines.sh            # after scripts/setup.sh; SmolLM2 needs '.[smollm2]'
set -euo pipefail
cd "$(dirname "$0")/.."
EVAL=".venv/bin/pettingllms-eval"
OUT=leaderboard/results
ALL=plan-path-v0,sokoban-v0,sudoku-v0,math-v0,code-v0
mkdir -p "$OUT"

# the floor and the ceiling, every env (code-v0: all 164 HumanEval problems)
$EVAL --env "$ALL" --policy random --episodes 200 --label random --output "$OUT/random.json"
$EVAL --env "$ALL" --policy oracle --episodes 200 --label "oracle (solver / reference)" --output "$OUT/oracle.json"

# the built-in tiny model on plan-path-v0's default 5x5 grids: untrained, and after its default warm start
$EVAL --env plan-path-v0 --policy tiny-untrained --episodes 300 --label "tiny, untrained" --output "$OUT/tiny_untrained.json"
$EVAL --env plan-path-v0 --policy tiny --episodes 300 --label "tiny, SFT warm start" --output "$OUT/tiny_sft.json"
# the default run (pettingllms-train with no arguments, 7x7 grids): its warm start, then the trained team, each on
# the run's own suite (a run is evaluated on its setting and suite size by default)
[ -d runs/tiny/plan_path_per_role/checkpoints/step_15 ] || .venv/bin/pettingllms-train --resume true
WARM_START=$(.venv/bin/python -c "from pettingllms.trainers.settings.arguments import parse
from pettingllms.trainers.policies.model_source import starting_model
print(starting_model('tiny', parse([])))")
$EVAL --env plan-path-v0 --policy "$WARM_START" --env_kwargs '{"size": 7}' --episodes 300 \
  --label "tiny, the default run's warm start (tool programs)" --output "$OUT/tiny_default_warm_start.json"
$EVAL --env plan-path-v0 --policy runs/tiny/plan_path_per_role --label "tiny, the default run (AT-GRPO per role)" \
  --output "$OUT/tiny_at_grpo.json"

# a real pretrained instruct model, zero-shot, every env (fewer episodes: ~135M parameters on a CPU)
$EVAL --env plan-path-v0,sokoban-v0,sudoku-v0 --policy smollm2 --episodes 10 \
  --label "SmolLM2-135M-Instruct, zero-shot" --output "$OUT/smollm2_puzzles.json"
$EVAL --env math-v0 --policy smollm2 --episodes 10 --max_new_tokens 256 \
  --label "SmolLM2-135M-Instruct, zero-shot" --output "$OUT/smollm2_math.json"
$EVAL --env code-v0 --policy smollm2 --episodes 5 --max_new_tokens 256 \
  --label "SmolLM2-135M-Instruct, zero-shot" --output "$OUT/smollm2_code.json"

.venv/bin/pettingllms leaderboard "$OUT" --out leaderboard
