"""`relay-v0`: docs/architecture.md's recipe for an environment, followed word for word (each step marked).

A speaker sees a secret three-letter word and relays it; a listener, who never sees the word, answers it. In the
"single" workflow the listener guesses alone, told the first letter and, after each guess, how many positions were
right. Success: the
listener answers the word. Potentials: the listener's is the share of positions its latest answer gets right; the
speaker's, the share its latest relay gets right. Team reward 1.0 on success. An answer that holds no word costs
0.1. So every agent's return is at most 1 + alpha, reached by answering the word.

Test code (tests/test_recipe_env.py registers it); a real env's module lives in `pettingllms/envs/<name>/env.py`.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from pettingllms.core.env import StepOutcome, TextAECEnv
from pettingllms.core.parsing import extract_answer
from pettingllms.core.splits import draw_in_split

LETTERS = "abcdefgh"
WORD_LENGTH = 3
PENALTY = 0.1
SUCCESS_REWARD = 1.0
ANSWER_FORMAT = f"Answer <answer>WORD</answer>, WORD being {WORD_LENGTH} letters from '{LETTERS}'."
_WORD = re.compile(rf"^[{LETTERS}]{{{WORD_LENGTH}}}$")


# Step 1: subclass TextAECEnv and set its class attributes.
class RelayEnv(TextAECEnv):
    """A speaker relays a secret word; a listener answers it (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "relay-v0",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
    }
    WORKFLOWS: ClassVar[dict[str, tuple[str, ...]]] = {
        "mas": ("speaker", "listener"),
        "single": ("listener",),
    }
    DEFAULT_MAX_TURNS: ClassVar[int] = 3
    RESET_OPTIONS: ClassVar[frozenset[str]] = frozenset({"split"})
    STOP_STRINGS: ClassVar[tuple[str, ...]] = ("</answer>",)

    # Step 2: `_reset_task` draws from `self.np_random` only, in the split that `options["split"]` names.
    def _reset_task(self, options: dict[str, Any]) -> None:
        split = options.pop("split", "train")
        self.word = draw_in_split(_draw_word, lambda word: ("relay", word), self.np_random, split)
        self.relayed: str | None = None
        self.guesses: list[tuple[str, int]] = []  # (guess, positions right)

    # Step 3: `_act` applies any string without raising; progress is a potential; success pays the team once.
    def _act(self, agent: str, action: str) -> StepOutcome:
        answer = (extract_answer(action) or "").lower()
        if not _WORD.match(answer):
            return StepOutcome(
                reward_local=-PENALTY, error=f"no word found. {ANSWER_FORMAT}", parse_error=True
            )
        right = sum(a == b for a, b in zip(answer, self.word, strict=True))
        level = right / WORD_LENGTH
        if agent == "speaker":
            self.relayed = answer
            return StepOutcome(potentials={agent: level})
        self.guesses.append((answer, right))
        self.success = answer == self.word
        return StepOutcome(
            potentials={agent: level},
            reward_team=SUCCESS_REWARD if self.success else 0.0,
            terminal=self.success,
            info={"right": right},
        )

    # Step 4: `_observation_text` is the agent's whole prompt: task, what it may see, the answer format.
    def _observation_text(self, agent: str) -> str:
        if agent == "speaker":
            seen = f"The secret word is {self.word!r}. Relay it to the listener."
        elif "speaker" in self.possible_agents:
            seen = f"The speaker relays: {self.relayed!r}. Answer the secret word."
        else:
            tried = "; ".join(f"{guess}: {right} right" for guess, right in self.guesses) or "none yet"
            seen = f"Guess the secret word; it starts with {self.word[0]!r}. Your guesses so far: {tried}."
        header = f"# relay-v0 - turn {self.display_turn} of {self.max_turns}"
        return f"{header}\n{seen}\n## Your answer\n{ANSWER_FORMAT}"

    # Step 5: `_render_text` draws the state for a person.
    def _render_text(self) -> str:
        guesses = ", ".join(guess for guess, _ in self.guesses) or "-"
        return f"word {self.word}; relayed {self.relayed or '-'}; guesses {guesses}; turn {self.display_turn}"

    # Step 6: `solution` answers right in the current state; `random_answer` answers at random, from `rng`.
    def solution(self, agent: str | None = None) -> str:
        return f"<answer>{self.word}</answer>"

    def random_answer(self, agent: str, rng: np.random.Generator) -> str:
        return f"<answer>{_draw_word(rng)}</answer>"


def _draw_word(rng: np.random.Generator) -> str:
    return "".join(rng.choice(list(LETTERS), size=WORD_LENGTH))
