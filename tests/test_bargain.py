"""`bargain-v0`, the general-sum game (issue 27): one step rewards both parties, the solvers' profile is one no
unilateral deviation beats, the rollout engine credits a candidate with what the rest of its turn paid it, and the
trainer trains on it."""

import functools

import numpy as np
import pytest

import pettingllms
from pettingllms.backends import SamplingConfig
from pettingllms.backends.base import Generation
from pettingllms.envs.bargain.env import PARSE_ERROR_PENALTY
from pettingllms.rollout.engine import RolloutEngine
from pettingllms.testing.returns import STRATEGIES, check_returns, oracle, play_returns

pytestmark = pytest.mark.usefixtures("quiet_pettingzoo_advice")


def fresh(seed=3, **kwargs):
    env = pettingllms.make("bargain-v0", **kwargs)
    env.reset(seed=seed)
    return env


def test_the_buyers_accept_pays_both_parties_their_shares_and_the_team_its_deal():
    env = fresh(alpha=0.5)
    cost, value = env.unwrapped.deal.cost, env.unwrapped.deal.value  # 51 and 65 for seed 3
    price = cost + 10
    env.step(f"<answer>offer {price}</answer>")
    assert env.rewards == {"seller": 0.0, "buyer": 0.0}
    env.step("<answer>accept</answer>")
    surplus = value - cost
    seller, buyer = 10 / surplus, (value - price) / surplus  # worked by hand from the two private numbers
    assert env.infos["seller"]["reward_local"] == pytest.approx(seller)
    assert env.infos["buyer"]["reward_local"] == pytest.approx(buyer)
    assert env.infos["seller"]["reward_paid"] == pytest.approx(seller)  # paid by the buyer's step
    assert "reward_paid" not in env.infos["buyer"]  # the acting agent's own reward is not a payment to it
    assert env.rewards == pytest.approx({"seller": 0.5 * 1.0 + seller, "buyer": 0.5 * 1.0 + buyer})
    assert env.unwrapped.success and all(env.terminations.values())


def test_a_deal_outside_the_parties_numbers_is_no_success_and_costs_the_loser():
    env = fresh()
    value = env.unwrapped.deal.value
    env.step(f"<answer>offer {value + 20}</answer>")
    env.step("<answer>accept</answer>")
    assert not env.unwrapped.success and env.infos["buyer"]["reward_team"] == 0.0
    assert env.infos["buyer"]["reward_local"] < 0 < env.infos["seller"]["reward_local"]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("<answer>accept</answer>", "no offer from the buyer to accept yet"),
        ("<answer>offer 151</answer>", "price 151 is outside 0..150"),
        ("<answer>sell high</answer>", "is neither 'offer P' nor 'accept'"),
        ("I offer 50", "no <answer>...</answer> found"),
    ],
)
def test_unusable_answers_are_penalised_with_an_explanation(answer, error):
    env = fresh()
    env.step(answer)
    assert error in env.infos["seller"]["error"] and env.infos["seller"]["parse_error"]
    assert env.rewards["seller"] == -PARSE_ERROR_PENALTY and env.rewards["buyer"] == 0.0


def test_stalling_to_the_end_earns_nothing():
    returns = play_returns(
        functools.partial(pettingllms.make, "bargain-v0"),
        {"seller": STRATEGIES["chatter"], "buyer": STRATEGIES["chatter"]},
        seed=0,
    )
    assert returns == pytest.approx({"seller": -0.4, "buyer": -0.4})  # four penalties each, no deal


@pytest.mark.parametrize("workflow", ["mas", "single"])
def test_no_party_gains_by_deviating_alone_from_the_even_split(workflow):
    check_returns(
        functools.partial(pettingllms.make, "bargain-v0", workflow=workflow),
        general_sum=True,
        seeds=(0, 1, 2),
    )


def test_a_party_can_gain_from_its_partners_mistakes_so_joint_deviations_are_not_bounded():
    make = functools.partial(pettingllms.make, "bargain-v0", alpha=0.0)

    def gullible(env, agent, seat):  # the buyer accepts whatever the seller asks
        return "<answer>accept</answer>"

    def greedy(env, agent, seat):  # the seller asks the buyer's value
        return f"<answer>offer {env.deal.value}</answer>"

    fair = play_returns(make, {"seller": oracle, "buyer": oracle}, seed=0)
    exploited = play_returns(make, {"seller": greedy, "buyer": gullible}, seed=0)
    assert exploited["seller"] == pytest.approx(1.0) and fair["seller"] < 0.51
    with pytest.raises(AssertionError, match="all=random|all=constant"):
        check_returns(functools.partial(pettingllms.make, "bargain-v0"), seeds=(0, 1, 2))


class Offers:
    """The seller's K candidates: offers at the cost, the even price, the value, and above the value."""

    def generate_from_state(self, envs, agent, n):
        def offers(deal):
            return [deal.cost, deal.even_price, deal.value, deal.value + 5][:n]

        return [
            [Generation(f"<answer>offer {p}</answer>") for p in offers(env.unwrapped.deal)] for env in envs
        ]


class Solver:
    def generate_from_state(self, envs, agent, n):
        return [[Generation(env.unwrapped.solution(agent))] * n for env in envs]


def test_a_sellers_candidate_is_credited_with_the_share_the_buyers_greedy_accept_pays_it():
    env_fn = functools.partial(pettingllms.make, "bargain-v0", alpha=0.0, max_turns=1)
    engine = RolloutEngine(
        env_fn,
        {"seller": Offers(), "buyer": Solver()},
        {"seller": "seller", "buyer": "buyer"},
        {"seller": SamplingConfig(), "buyer": SamplingConfig()},
        num_generations=4,
    )
    rollout = engine.collect([3])
    deal = fresh(3).unwrapped.deal
    surplus = deal.value - deal.cost
    seller = [s for s in rollout.samples if s.agent == "seller"]
    # the solver buyer accepts the cost and the even price, and counters the others (no deal in one turn)
    expected = [0.0, (deal.even_price - deal.cost) / surplus, 0.0, 0.0]
    assert [s.reward for s in seller] == pytest.approx(expected)
    assert [s.reward_local for s in seller] == pytest.approx(expected)  # alpha 0: all of it is the paid share
    assert [s.committed for s in seller] == [False, True, False, False]
    (episode,) = rollout.episodes
    assert episode.success and episode.turns == 1
    assert episode.returns["seller"] == pytest.approx(expected[1])
    assert episode.returns["buyer"] == pytest.approx((deal.value - deal.even_price) / surplus)


def test_a_random_team_reaches_deals_of_both_kinds():
    env = pettingllms.make("bargain-v0")
    rng = np.random.default_rng(0)
    outcomes = set()
    for seed in range(60):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            *_, termination, truncation, _ = env.last()
            env.step(None if termination or truncation else env.unwrapped.random_answer(agent, rng))
        outcomes.add((env.unwrapped.price is not None, env.unwrapped.success))
    assert {(True, True), (True, False), (False, False)} <= outcomes


@pytest.fixture(scope="module")
def bargain_model(tmp_path_factory):
    pytest.importorskip("torch")
    from letters import build_imitation_model

    return build_imitation_model(tmp_path_factory.mktemp("bargain"), "bargain-v0")


def test_the_trainer_trains_both_parties_one_step(bargain_model, tmp_path, one_torch_thread):
    import json

    from letters import train_one_step

    changed = train_one_step(
        bargain_model,
        tmp_path,
        "bargain-v0",
        *("--dump_rollouts", "true", "--max_completion_length", "24", "--instances_per_step", "4"),
    )
    assert changed == {"buyer": True, "seller": True}
    rows = [json.loads(line) for line in (tmp_path / "rollouts" / "step_1.jsonl").read_text().splitlines()]
    assert {row["agent"] for row in rows} == {"seller", "buyer"}
    assert all(
        row["reward"] == pytest.approx(row["reward_team"] + row["reward_local"]) for row in rows
    )  # alpha 1


def test_paying_an_agent_that_is_not_in_the_episode_is_an_env_bug():
    from pettingllms.core.env import StepOutcome

    env = fresh()
    raw = env.unwrapped
    raw._act = lambda agent, action: StepOutcome(reward_local={"auctioneer": 1.0})  # a buggy env's step
    with pytest.raises(ValueError, match=r"pays \['auctioneer'\], not in \['seller', 'buyer'\]"):
        env.step("<answer>offer 50</answer>")
