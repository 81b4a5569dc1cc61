"""`bargain-v0`: a seller and a buyer haggle over the price of one item, a general-sum game.

Each instance draws the seller's cost `c` and the buyer's value `v` (integers, `c < v`); each party sees its own
number only, the price range and every offer made so far. Each turn, in order:

1. `seller` answers `<answer>offer P</answer>` (P an integer price in [`PRICE_MIN`, `PRICE_MAX`]) or
   `<answer>accept</answer>`: it accepts the buyer's standing offer (made in the previous turn);
2. `buyer` answers `<answer>offer P</answer>` or `<answer>accept</answer>`: it accepts the seller's offer of this
   turn (or, if the seller made none, the seller's standing one).

An accept closes the deal at the accepted price and ends the episode; `max_turns` turns without a deal truncate it
(no deal: nobody earns anything).

Rewards (`pettingllms.core.env`'s contract for general-sum games). A deal at price `p` pays each party its share
of the surplus `S = v - c` at once, on the step of the accept, whoever accepted: the seller `(p - c) / S`, the
buyer `(v - p) / S` (one step paying both agents: `StepOutcome.reward_local` as a mapping; a share is negative for
a price outside `[c, v]`). The team reward is `SUCCESS_REWARD` (1.0) when a deal closes at a price both gain from
(`c <= p <= v`): that is `success`. An answer that holds no usable move (no answer, an unknown word, a price out of
range, an accept with no offer standing) costs the acting agent `PARSE_ERROR_PENALTY` (0.1). The local shares of a
deal sum to 1: what one party gains on the price the other loses, while both gain `alpha` from a deal being made.

Returns. The solver (`solution`) plays the even split `p* = (c + v) // 2`, knowing both numbers: it accepts an
offer at least as good for it as `p*`, else offers `p*`; the solvers' deal earns the seller `(p* - c) / S + alpha`
and the buyer `(v - p*) / S + alpha`. No unilateral deviation from that profile (stalling, chatter, random or
constant offers, repeating, oscillating, accepting late) earns the deviating party or its partner more, for any
alpha >= 0: `tests/test_returns.py` checks it with `check_returns(..., joint=False)`. Joint deviations are not
bounded by the solvers' returns, as in any general-sum game: a party can gain when the other plays badly
(a buyer accepting any price pays a clever seller more than the even split).

Progress (`env.unwrapped.progress()`, 0 to 100): 100 once a deal closes at a price both gain from (`success`),
else 0.

Workflows: "mas" (seller, buyer); "single" (the buyer alone, against the solver's seller, which offers `p*` every
turn and accepts an offer of at least `p*`). Reset options: `split` ("train", "val", "eval"; the instance's
`(c, v)` decides its split).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar

import numpy as np

from pettingllms.core.env import StepOutcome, TextAECEnv
from pettingllms.core.parsing import extract_answer
from pettingllms.core.splits import check_split, draw_in_split

PRICE_MIN, PRICE_MAX = 0, 150
COST_RANGE = (10, 60)
"""The seller's cost is drawn uniformly from this range (inclusive)."""
GAP_RANGE = (10, 60)
"""The buyer's value exceeds the cost by a gap drawn uniformly from this range (inclusive)."""
SUCCESS_REWARD = 1.0
PARSE_ERROR_PENALTY = 0.1
ANSWER_FORMAT = (
    f"Answer <answer>offer P</answer> with P a whole price from {PRICE_MIN} to {PRICE_MAX}, or "
    "<answer>accept</answer> to accept the other party's latest offer."
)
_OFFER = re.compile(r"^offer\s+(-?\d{1,6})$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Deal:
    """The item's two private numbers: the seller's cost and the buyer's value."""

    cost: int
    value: int

    @property
    def even_price(self) -> int:
        """The even split of the surplus (rounded down): the solvers' price."""
        return (self.cost + self.value) // 2


@dataclasses.dataclass(frozen=True)
class Move:
    """A parsed answer: an offer at `price`, or an accept (`price` None)."""

    price: int | None


class BargainEnv(TextAECEnv):
    """A seller and a buyer negotiate a price (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "bargain-v0",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
    }
    WORKFLOWS: ClassVar[dict[str, tuple[str, ...]]] = {"mas": ("seller", "buyer"), "single": ("buyer",)}
    STOP_STRINGS: ClassVar[tuple[str, ...]] = ("</answer>",)
    DEFAULT_MAX_TURNS: ClassVar[int] = 4
    RESET_OPTIONS: ClassVar[frozenset[str]] = frozenset({"split"})

    # ----------------------------------------------------------------- the task
    def _reset_task(self, options: dict[str, Any]) -> None:
        split = check_split(options.pop("split", "train"))
        self.deal = draw_in_split(_draw_deal, _deal_key, self.np_random, split)
        self.offers: list[tuple[int, str, int]] = []  # (turn, agent, price), in order
        self.standing: dict[str, int] = {}  # agent -> its latest offer
        self.price: int | None = None
        if "seller" not in self.possible_agents:
            self._scripted_seller_offers(0)

    def _act(self, agent: str, action: str) -> StepOutcome:
        move, error = self._parse(agent, action)
        if error is not None:
            return StepOutcome(reward_local=-PARSE_ERROR_PENALTY, error=error, parse_error=True)
        other = self._other(agent)
        if move.price is None:
            return self._close(self.standing[other])
        self.offers.append((self.turn, agent, move.price))
        self.standing[agent] = move.price
        if "seller" not in self.possible_agents and move.price >= self.deal.even_price:
            return self._close(move.price)  # the scripted seller accepts
        if "seller" not in self.possible_agents:
            self._scripted_seller_offers(self.turn + 1)  # at the start of the next turn
        return StepOutcome(info={"offer": move.price})

    def _parse(self, agent: str, action: str) -> tuple[Move | None, str | None]:
        """The answer's move, or why it holds none."""
        answer = extract_answer(action)
        if answer is None:
            return None, f"no <answer>...</answer> found. {ANSWER_FORMAT}"
        if answer.lower() == "accept":
            if self._other(agent) not in self.standing:
                return None, f"there is no offer from the {self._other(agent)} to accept yet; make an offer"
            return Move(None), None
        match = _OFFER.match(answer)
        if match is None:
            return None, f"{answer[:80]!r} is neither 'offer P' nor 'accept'. {ANSWER_FORMAT}"
        price = int(match.group(1))
        if not PRICE_MIN <= price <= PRICE_MAX:
            return None, f"price {price} is outside {PRICE_MIN}..{PRICE_MAX}"
        return Move(price), None

    def _close(self, price: int) -> StepOutcome:
        """The deal at `price`: each party paid its share of the surplus; the team paid when both gain."""
        self.price = price
        surplus = self.deal.value - self.deal.cost
        shares = {"seller": (price - self.deal.cost) / surplus, "buyer": (self.deal.value - price) / surplus}
        self.success = self.deal.cost <= price <= self.deal.value
        return StepOutcome(
            reward_local={agent: share for agent, share in shares.items() if agent in self.agents},
            reward_team=SUCCESS_REWARD if self.success else 0.0,
            terminal=True,
            info={"price": price},
        )

    def _scripted_seller_offers(self, turn: int) -> None:
        """The "single" workflow's seller (the solver) offers the even price in `turn`."""
        self.offers.append((turn, "seller", self.deal.even_price))
        self.standing["seller"] = self.deal.even_price

    def _other(self, agent: str) -> str:
        return "buyer" if agent == "seller" else "seller"

    # ----------------------------------------------------------------- what the agents see
    def _observation_text(self, agent: str) -> str:
        own = (
            f"You are the seller of one item. It cost you {self.deal.cost}: selling at price P earns you "
            f"P - {self.deal.cost}."
            if agent == "seller"
            else f"You are the buyer of one item. It is worth {self.deal.value} to you: buying at price P earns "
            f"you {self.deal.value} - P."
        )
        other = self._other(agent)
        standing = (
            f"The {other}'s latest offer: {self.standing[other]}."
            if other in self.standing
            else f"The {other} has made no offer yet."
        )
        return "\n".join(
            [
                f"# {self.metadata['name']} - turn {self.display_turn} of {self.max_turns}",
                own,
                "Without a deal by the last turn nobody earns anything. Each party knows only its own number.",
                "## Offers so far",
                self._history() or "(none)",
                standing,
                "## Your answer",
                ANSWER_FORMAT,
            ]
        )

    def _history(self) -> str:
        return "\n".join(f"turn {turn + 1}: {agent} offers {price}" for turn, agent, price in self.offers)

    def _render_text(self) -> str:
        outcome = "no deal yet" if self.price is None else f"deal at {self.price}"
        return (
            f"cost {self.deal.cost}, value {self.deal.value}, even price {self.deal.even_price}; turn "
            f"{self.display_turn} of {self.max_turns}; {outcome}\n{self._history()}"
        ).rstrip()

    # ----------------------------------------------------------------- the oracle API
    def solution(self, agent: str | None = None) -> str:
        """The even split: accept an offer at least as good as `p*` for `agent`, else offer `p*`."""
        agent = agent or self.agent_selection
        other, even = self._other(agent), self.deal.even_price
        offered = self.standing.get(other)
        good = offered is not None and (offered >= even if agent == "seller" else offered <= even)
        return "<answer>accept</answer>" if good else f"<answer>offer {even}</answer>"

    def random_answer(self, agent: str, rng: np.random.Generator) -> str:
        """An accept one time in five, else an offer at a uniformly drawn price of the range."""
        if rng.random() < 0.2:
            return "<answer>accept</answer>"
        return f"<answer>offer {int(rng.integers(PRICE_MIN, PRICE_MAX + 1))}</answer>"


def _draw_deal(rng: np.random.Generator) -> Deal:
    cost = int(rng.integers(COST_RANGE[0], COST_RANGE[1] + 1))
    return Deal(cost, cost + int(rng.integers(GAP_RANGE[0], GAP_RANGE[1] + 1)))


def _deal_key(deal: Deal) -> tuple[str, int, int]:
    return ("bargain", deal.cost, deal.value)
