"""TextArena's games as PettingZoo AEC environments: `pettingllms.make("textarena/TicTacToe-v0")` (extra
`textarena`, pinned to `TEXTARENA_VERSION`), and TextArena-style agents (callables from observation to answer)
playing this package's environments (`play_with_agents`).

Every id of TextArena's registry is reachable as `textarena/<id>` (they are registered on first use, so listing
the built-in envs imports nothing of TextArena). The agents are `player_0 .. player_{n-1}`, TextArena's player ids;
the agent to act is the player TextArena asks next (an invalid move may give the same player another try). A
player's observation is TextArena's text for it, as of its latest turn. When the game ends each player's reward is
TextArena's (win 1, loss -1, draw 0 in two-player games), in `info["reward_local"]` (`reward_team` is 0: the players
are opponents); `info["success"]` and the env's `success` say whether `player_0` won, so that evaluating a policy
in seat 0 against others (`pettingllms-eval --policy player_0=...,player_1=...`) reports its win rate. `turn` counts
rounds (every player moved once); `max_turns` (default: none) truncates a game that runs longer. Reset options
`{"split": "train" | "val" | "eval"}` draw TextArena's seed from disjoint streams of the episode seed
(`core.seeding`), so that training and evaluation games differ wherever a game's setup is random.

Moves and observations are bounded before TextArena sees them or a player reads them:

- A move longer than `MOVE_MAX_CHARS` (2,000) characters is cut to its last 2,000 (where a final answer
  usually is, as TextArena's own `ClipCharactersActionWrapper` cuts), and its player gets a `[GAME]` line
  saying so (an admin line, which a game's `-train` variant does not show). The cut carries no penalty of its
  own: TextArena judges the cut move, and one with no legal move in it is an invalid move under TextArena's
  rules. The cap also bounds TextArena's move parsing, quadratic in a move's length for some games
  (ConnectFour's regex).
- A move's role tags (`[GAME]`, `[Player 1]`, the game's role names such as `[White]`) are removed until none
  is left, so that a move cannot forge a line of the game in the other players' view: TextArena removes each
  tag once, and `[GA[GAME]ME]` became `[GAME]`.
- A player's observation is TextArena's whole history for it; when that is longer than
  `OBSERVATION_MAX_CHARS`, it keeps its first `HISTORY_HEAD_CHARS` (TextArena's prompt: the player's role and
  the rules) and its end (the latest moves and board), with `HISTORY_CUT_MARKER` where turns were cut.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from pettingzoo import AECEnv

from pettingllms.core.errors import ConfigError, DependencyNotInstalled
from pettingllms.core.seeding import check_reset_seed, derive_seed
from pettingllms.core.text import (
    OBSERVATION_MAX_CHARS,
    AnyText,
    PrintableText,
    TextObservation,
    sanitize,
)

TEXTARENA_VERSION = "0.7.4"
"""The TextArena release this bridge is tested with (the `textarena` extra pins it)."""
PREFIX = "textarena/"
SPLITS = ("train", "val", "eval")
MOVE_MAX_CHARS = 2_000
"""The longest move handed to TextArena: a longer one is cut to its last `MOVE_MAX_CHARS` characters."""
HISTORY_HEAD_CHARS = OBSERVATION_MAX_CHARS // 4
"""How much of the start of a history too long for an observation it keeps (the rest comes from its end)."""
HISTORY_CUT_MARKER = "\n...[earlier turns cut]...\n"
"""What stands in a cut observation where the turns between its start and its end were."""


def import_textarena():
    """The `textarena` module; `DependencyNotInstalled` naming the extra when it is missing."""
    try:
        import textarena
    except ImportError as error:
        raise DependencyNotInstalled(
            f"TextArena games need the textarena package: pip install 'pettingllms[textarena]' "
            f"(textarena=={TEXTARENA_VERSION})"
        ) from error
    return textarena


def game_ids() -> list[str]:
    """Every game id of the installed TextArena's registry (without the `textarena/` prefix)."""
    import_textarena()
    from textarena.envs.registration import ENV_REGISTRY

    return sorted(ENV_REGISTRY)


def register_game(env_id: str) -> None:
    """Register `textarena/<game>` (the namespace resolver of `pettingllms.core.registration`); an unknown game is a
    `NameNotFound` with the closest TextArena ids."""
    import difflib

    from pettingllms.core.errors import NameNotFound
    from pettingllms.core.registration import register

    game = env_id.removeprefix(PREFIX)
    known = game_ids()
    if game not in known:
        close = difflib.get_close_matches(game, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(PREFIX + c for c in close)}?" if close else ""
        raise NameNotFound(
            f"TextArena has no game {game!r}.{hint} ({len(known)} games: textarena.envs.registration)"
        )
    register(
        env_id,
        TextArenaEnv,
        description=f"TextArena's {game} (textarena=={TEXTARENA_VERSION})",
        kwargs={"game_id": game},
        extra="textarena",
    )


class TextArenaEnv(AECEnv):
    """One TextArena game behind PettingZoo's AEC API (see the module docstring)."""

    metadata = {"name": "textarena", "render_modes": ["ansi"], "is_parallelizable": False}
    STOP_STRINGS: tuple[str, ...] = ()

    def __init__(
        self,
        game_id: str,
        *,
        num_players: int = 2,
        max_turns: int | None = None,
        alpha: float = 1.0,
        workflow: str = "mas",
        render_mode: str | None = None,
    ):
        super().__init__()
        if workflow != "mas":
            raise ConfigError(f"workflow={workflow!r}: a TextArena game has every player ('mas') only")
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
        ):
            raise ConfigError(f"max_turns={max_turns!r} must be an integer >= 1 or None (the game's own end)")
        if render_mode not in (None, "ansi"):
            raise ConfigError(
                f"render_mode={render_mode!r} is not supported; allowed values: ['ansi'] or None"
            )
        self._game = import_textarena().make(game_id)
        self.game_id, self.num_players, self.max_turns = game_id, num_players, max_turns
        self.alpha, self.workflow, self.render_mode = float(alpha), workflow, render_mode
        self.metadata = {**copy.deepcopy(type(self).metadata), "name": f"{PREFIX}{game_id}"}
        self.possible_agents = [f"player_{index}" for index in range(num_players)]
        self._observation_spaces = {
            agent: PrintableText(OBSERVATION_MAX_CHARS) for agent in self.possible_agents
        }
        self._action_spaces = {agent: AnyText() for agent in self.possible_agents}
        self.turn, self.success, self._moves = 0, False, 0
        self._texts: dict[str, str] = {}

    def observation_space(self, agent: str) -> PrintableText:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> AnyText:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        split = options.pop("split", "train")
        if split not in SPLITS:
            raise ConfigError(f"split={split!r} is not supported; allowed values: {list(SPLITS)}")
        if options:
            warnings.warn(
                f"{self.metadata['name']}.reset ignores unknown option(s) {sorted(options)}", stacklevel=2
            )
        seed = check_reset_seed(seed)
        game_seed = None if seed is None else derive_seed(seed, "textarena", split)
        # a fresh game per episode: TextArena 0.7.4's observation wrapper keeps a player's text across resets
        self._game = import_textarena().make(self.game_id)
        self._game.reset(num_players=self.num_players, seed=game_seed)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.turn, self.success, self._moves = 0, False, 0
        self._texts = dict.fromkeys(self.agents, "")
        self.infos = {agent: self._info(0.0) for agent in self.agents}
        self._read_next()

    def observe(self, agent: str) -> TextObservation:
        return TextObservation(
            keep_start_and_end(sanitize(self._texts.get(agent, "")), OBSERVATION_MAX_CHARS)
        )

    def step(self, action: str | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        done, _ = self._game.step(self._move(str(action)))
        self._moves += 1
        self.turn = self._moves // self.num_players
        self.rewards = dict.fromkeys(self.agents, 0.0)
        if done:
            rewards, game_info = self._game.close()
            for index, reward in rewards.items():
                self.rewards[self.possible_agents[index]] = float(reward)
            self.success = rewards.get(0, 0) > 0
            self.terminations = dict.fromkeys(self.agents, True)
            self.infos = {
                name: {**self._info(self.rewards[name]), "game": game_info.get(index, {})}
                for index, name in enumerate(self.possible_agents)
            }
        else:
            if self.max_turns is not None and self.turn >= self.max_turns:
                self.truncations = dict.fromkeys(self.agents, True)
            self.infos = {name: self._info(0.0) for name in self.agents}
            self._read_next()
        self._accumulate_rewards()

    def _move(self, action: str) -> str:
        """`action` as TextArena gets it: cut to its last `MOVE_MAX_CHARS` characters (its player is told so
        in a `[GAME]` line only it sees, before the move in its history), then stripped of role tags."""
        if len(action) > MOVE_MAX_CHARS:
            self._game.state.add_observation(
                message=(
                    f"Your move had {len(action):,} characters; moves are capped at {MOVE_MAX_CHARS:,}, "
                    f"so only its last {MOVE_MAX_CHARS:,} were played."
                ),
                observation_type=import_textarena().ObservationType.GAME_ADMIN,
                to_id=self._game.state.current_player_id,
            )
            action = action[-MOVE_MAX_CHARS:]
        return strip_role_tags(action, self._role_tags())

    def _role_tags(self) -> set[str]:
        """The names TextArena writes in brackets before a message: `GAME`, `Player <i>`, the game's roles."""
        roles = getattr(self._game.state, "role_mapping", None) or {}
        return {"GAME", *(f"Player {index}" for index in range(self.num_players)), *map(str, roles.values())}

    def _read_next(self) -> None:
        player, text = self._game.get_observation()
        self.agent_selection = self.possible_agents[player]
        self._texts[self.agent_selection] = str(text)

    def _info(self, reward: float) -> dict[str, Any]:
        """`turn`: the round being played, from 1 (every player moves once per round; `max_turns` once the rounds
        are spent); `step_turn`: the 0-based round of the latest move (0 before any), as `pettingllms.core.env`
        defines both."""
        step_turn = max(self._moves - 1, 0) // self.num_players
        shown = self.turn + 1 if self.max_turns is None else min(self.turn + 1, self.max_turns)
        return {
            "reward_team": 0.0,
            "reward_local": reward,
            "turn": shown,
            "step_turn": step_turn,
            "success": self.success,
        }

    def clone(self) -> TextArenaEnv:
        """An independent deep copy (the TextArena game included)."""
        return copy.deepcopy(self)

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        return f"{self.metadata['name']}: round {self.turn}; next: {self.agent_selection}\n{self._texts.get(self.agent_selection, '')}"

    def close(self) -> None:
        """Nothing to release (TextArena's `close` ends a game and is called when it is over)."""


def strip_role_tags(move: str, tags: set[str]) -> str:
    """`move` without any `[tag]` of `tags`, removed until none is left (`[GA[GAME]ME]` -> ``): one pass
    would leave the tag that the removal assembles. Each pass is linear in `len(move)` and all but the last
    remove at least one tag, so at most about `len(move) / 3` passes run."""
    if not tags:
        return move
    pattern = re.compile("|".join(re.escape(f"[{tag}]") for tag in sorted(tags, key=len, reverse=True)))
    while True:
        stripped = pattern.sub("", move)
        if stripped == move:
            return move
        move = stripped


def keep_start_and_end(text: str, limit: int) -> str:
    """`text` if it has at most `limit` characters, else its first `HISTORY_HEAD_CHARS` characters (at most a
    quarter of `limit`), `HISTORY_CUT_MARKER`, and its end, `limit` characters in all: a growing history keeps
    its prompt and its latest turns."""
    if len(text) <= limit:
        return text
    head = min(HISTORY_HEAD_CHARS, limit // 4)
    tail = max(0, limit - head - len(HISTORY_CUT_MARKER))
    return (text[:head] + HISTORY_CUT_MARKER + (text[-tail:] if tail else ""))[:limit]


def play_with_agents(
    env: AECEnv, agents: Mapping[str, Callable[[str], str]], *, seed: int | None = None
) -> dict:
    """Play one episode of `env` (any pettingllms env) with TextArena-style agents: `agents[name](observation)`
    returns the answer of agent `name`. Returns each agent's summed reward and the episode's `success`."""
    missing = sorted(set(env.possible_agents) - set(agents))
    if missing:
        raise ConfigError(f"agents for {missing} are missing; the env's agents: {env.possible_agents}")
    env.reset(seed=seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for name in env.agent_iter():
        observation, reward, termination, truncation, _ = env.last()
        returns[name] += float(reward)
        env.step(None if termination or truncation else str(agents[name](str(observation))))
    return {"returns": returns, "success": bool(env.unwrapped.success)}
