"""`lora_generation="merged"`: each LoRA adapter samples from a copy of the base with the adapter merged in.

The reference is PEFT itself: the same PEFT model with the adapter active, sampled by the same `HFPolicy` loop
(`lora_generation="adapters"`), must give the same greedy completions and log-probabilities; a copy samples the
weights of its last sync, and syncing one adapter leaves the others' copies alone."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from letters import args_for, unequal_samples  # noqa: E402

from pettingllms.backends.base import SamplingConfig  # noqa: E402
from pettingllms.backends.hf import HFPolicy  # noqa: E402
from pettingllms.core.errors import ConfigError  # noqa: E402
from pettingllms.trainers.at_grpo import ATGRPOTrainer  # noqa: E402
from pettingllms.trainers.policies.memory_plan import GIB, Hardware, plan_run  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")
GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=8)
PROMPTS = ["tool: write a word like abca", "plan: write a word like hgfe"]


def lora_trainer(tiny_model, folder, *flags) -> ATGRPOTrainer:
    return ATGRPOTrainer(args_for(tiny_model, folder, "--policy_layout", "lora_per_role", *flags), log=print)


def through_peft(trainer: ATGRPOTrainer, adapter: str):
    """Greedy generations of `adapter` through the PEFT model itself (the adapter active, nothing merged)."""
    peft_model = trainer.policies.updaters[adapter].model
    peft_model.set_adapter(adapter)
    sampler = HFPolicy(peft_model, trainer.policies.updaters[adapter].processing_class)
    return [group[0] for group in sampler.generate(PROMPTS, 1, GREEDY)]


def merged(trainer: ATGRPOTrainer, adapter: str):
    return [group[0] for group in trainer.policies.backends[adapter].generate(PROMPTS, 1, GREEDY)]


def assert_same(ours, reference) -> None:
    assert [g.completion_ids for g in ours] == [g.completion_ids for g in reference]
    for a, b in zip(ours, reference):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def move_adapter(trainer: ATGRPOTrainer, adapter: str) -> None:
    """One real update of `adapter` (LoRA's B starts at zero: before it, every adapter is the base model)."""
    trainer.policies.updaters[adapter].update(unequal_samples())


def test_a_merged_copy_samples_what_peft_samples_with_the_adapter_active(tiny_model, tmp_path):
    trainer = lora_trainer(tiny_model, tmp_path)
    for adapter in ("tool", "plan"):
        move_adapter(trainer, adapter)
        trainer.policies.handles[adapter].sync()
    for adapter in ("tool", "plan"):
        assert_same(merged(trainer, adapter), through_peft(trainer, adapter))
    assert merged(trainer, "tool")[0].logprobs != pytest.approx(merged(trainer, "plan")[0].logprobs, abs=1e-4)
    trainer.close()


def test_a_copy_samples_its_last_sync_and_one_sync_leaves_the_other_copy_alone(tiny_model, tmp_path):
    trainer = lora_trainer(tiny_model, tmp_path)
    before = {adapter: merged(trainer, adapter) for adapter in ("tool", "plan")}
    move_adapter(trainer, "tool")
    assert_same(merged(trainer, "tool"), before["tool"])  # updated, not yet synced
    trainer.policies.handles["tool"].sync()
    after = merged(trainer, "tool")
    assert_same(after, through_peft(trainer, "tool"))
    assert after[0].logprobs != pytest.approx(before["tool"][0].logprobs, abs=1e-4)
    assert_same(merged(trainer, "plan"), before["plan"])
    trainer.close()


def test_the_adapters_setting_samples_through_peft_without_copies(tiny_model, tmp_path):
    trainer = lora_trainer(tiny_model, tmp_path, "--lora_generation", "adapters")
    move_adapter(trainer, "tool")
    backend = trainer.policies.backends["tool"]
    assert backend.model_server.model is trainer.policies.updaters["tool"].model  # the PEFT model, no copy
    assert_same(merged(trainer, "tool"), through_peft(trainer, "tool"))  # live: nothing to sync
    trainer.close()


@pytest.mark.parametrize("bf16", ["false", "true"])
def test_the_memory_plan_counts_each_merged_copy_as_it_is_built(tiny_model, tmp_path, bf16):
    flags = ("--bf16", bf16, "--use_cpu", "true")
    trainer = lora_trainer(tiny_model, tmp_path, *flags)
    (planned,) = plan_run(trainer.args, trainer.agents, Hardware(1, 100 * GIB)).devices[0].policies
    copies = trainer.policies.backends["tool"].model_server.copies
    assert len(copies) == 2
    assert sum(p.nbytes for copy in copies.values() for p in copy.parameters()) == planned.generation_copy
    adapters = lora_trainer(tiny_model, tmp_path / "adapters", *flags, "--lora_generation", "adapters")
    (without,) = plan_run(adapters.args, adapters.agents, Hardware(1, 100 * GIB)).devices[0].policies
    assert without.generation_copy == 0 and without.sync == 0 and planned.sync > 0
    trainer.close()
    adapters.close()


def test_an_unknown_lora_generation_is_refused_with_the_choices(tiny_model, tmp_path):
    with pytest.raises(ConfigError, match=r"lora_generation.*'merged'.*'adapters'"):
        args_for(tiny_model, tmp_path, "--lora_generation", "fused")


def test_an_adapter_the_peft_model_does_not_hold_is_refused_by_name(tiny_model, tmp_path):
    from pettingllms.trainers.policies.merged_adapters import MergedAdapters

    trainer = lora_trainer(tiny_model, tmp_path)
    server = trainer.policies.backends["tool"].model_server
    with pytest.raises(KeyError, match=r"no copy for adapter 'coder'; adapters: \['plan', 'tool'\]"):
        server.for_adapter("coder")
    ghost = MergedAdapters(server.sampler, {"ghost": server.copies["tool"]})
    with pytest.raises(ValueError, match="no LoRA layer of adapter 'ghost'"):
        ghost.sync_adapter(trainer.policies.updaters["tool"].model, "ghost")
    trainer.close()
