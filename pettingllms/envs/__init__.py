"""Registration of the built-in environments: one flat list, string entry points, nothing imported here."""

from pettingllms.core.registration import register
from pettingllms.envs import tiers

register(
    id="sokoban-v0",
    entry_point="pettingllms.envs.sokoban.env:SokobanEnv",
    description="Push every box onto a goal; a tool agent may search with code, a plan agent moves.",
    tiers=tiers.SOKOBAN,
)
register(
    id="sudoku-v0",
    entry_point="pettingllms.envs.sudoku.env:SudokuEnv",
    description="Fill a 4x4 or 9x9 Sudoku; a tool agent may solve with code, a plan agent places digits.",
    tiers=tiers.SUDOKU,
)
register(
    id="plan-path-v0",
    entry_point="pettingllms.envs.plan_path.env:PlanPathEnv",
    description="Walk from @ to the goal G around walls; a tool agent may search with code, a plan agent moves.",
    tiers=tiers.PLAN_PATH,
)
register(
    id="plan-path-relay-v0",
    entry_point="pettingllms.envs.plan_path.relay:PlanPathRelayEnv",
    description="Plan-Path with a fresh grid every turn: T grids in a row, each turn's outcome its own.",
)
register(
    id="code-v0",
    entry_point="pettingllms.envs.code.env:CodeEnv",
    description="A coder writes a solution, a tester writes cases; success = the hidden tests pass.",
    tiers=tiers.CODE,
)
register(
    id="math-v0",
    entry_point="pettingllms.envs.math.env:MathEnv",
    description="A reasoner answers in \\boxed{}, a tool agent computes with code; done when they agree.",
    extra="math",
    tiers=tiers.MATH,
)
register(
    id="bargain-v0",
    entry_point="pettingllms.envs.bargain.env:BargainEnv",
    description="A seller and a buyer haggle over a price: a general-sum game (a deal pays both, unevenly).",
)
