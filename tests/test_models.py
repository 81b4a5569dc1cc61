"""The built-in tiny model: home folder, tokenizer, config/initialisation, demonstrations, cached warm start."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from markers import needs_bwrap  # noqa: E402

import pettingllms  # noqa: E402
from pettingllms.backends.base import SamplingConfig  # noqa: E402
from pettingllms.backends.hf import HFPolicy  # noqa: E402
from pettingllms.models import home  # noqa: E402
from pettingllms.models.tiny import build_model, count_parameters, tiny_config  # noqa: E402
from pettingllms.models.tokenizer import IM_END, IM_START, PAD_TOKEN, train_tokenizer  # noqa: E402
from pettingllms.warmstart.build import ensure_tiny_model, read_manifest, tiny_model_dir  # noqa: E402
from pettingllms.warmstart.demos import collect_demonstrations, correct_program, perturb_answer  # noqa: E402


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    demos = collect_demonstrations("plan-path-v0", range(30), np.random.default_rng(0))
    return [text for demo in demos for text in (demo.prompt, demo.target)]


@pytest.fixture(scope="module")
def tokenizer(corpus):
    return train_tokenizer(corpus, vocab_size=1024)


def test_home_from_env_var(monkeypatch, tmp_path):
    monkeypatch.setenv("PETTINGLLMS_HOME", str(tmp_path / "h"))
    assert home.pettingllms_home() == tmp_path / "h"
    assert tiny_model_dir("plan-path-v0", "mas") == tmp_path / "h" / "models" / "tiny-plan-path-v0-mas-v2"
    monkeypatch.delenv("PETTINGLLMS_HOME")
    assert home.pettingllms_home() == Path.home() / ".cache" / "pettingllms"


def test_tokenizer_round_trip_and_special_tokens(tokenizer, corpus):
    assert [tokenizer.convert_tokens_to_ids(t) for t in (PAD_TOKEN, IM_START, IM_END)] == [0, 1, 2]
    assert (tokenizer.pad_token, tokenizer.eos_token, tokenizer.padding_side) == (PAD_TOKEN, IM_END, "left")
    for text in [*corpus[:5], "héllo wörld 🎉\t\n  x", "```python\nprint('<answer>U</answer>')\n```", ""]:
        assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    # grid cells and moves are single tokens
    assert tokenizer.tokenize("..G.#\n.@...") == [".", ".", "G", ".", "#", "Ċ", ".", "@", ".", ".", "."]
    moves = tokenizer.tokenize("<answer>U R D L</answer>")
    start = moves.index("U")
    assert moves[start : start + 4] == ["U", "ĠR", "ĠD", "ĠL"]
    assert len(tokenizer) <= 1024


def test_tokenizer_training_is_deterministic(tokenizer, corpus):
    again = train_tokenizer(corpus, vocab_size=1024)
    assert again.backend_tokenizer.to_str() == tokenizer.backend_tokenizer.to_str()
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(corpus, vocab_size=100)


def test_chat_template_is_chatml_with_assistant_mask(tokenizer):
    user = [{"role": "user", "content": "go"}]
    assert tokenizer.apply_chat_template(user, tokenize=False, add_generation_prompt=True) == (
        "<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\n"
    )
    chat = [*user, {"role": "assistant", "content": "<answer>U</answer>"}]
    encoded = tokenizer.apply_chat_template(chat, return_dict=True, return_assistant_tokens_mask=True)
    trained = [t for t, m in zip(encoded["input_ids"], encoded["assistant_masks"]) if m]
    assert tokenizer.decode(trained) == "<answer>U</answer><|im_end|>"
    prompt = tokenizer.apply_chat_template(user, add_generation_prompt=True, return_dict=False)
    assert encoded["input_ids"][: len(prompt)] == list(prompt)  # the prompt's ids prefix the training ids


def test_tiny_config_and_seeded_init():
    config = tiny_config(500, num_hidden_layers=2)
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (128, 2, 4)
    assert (config.num_key_value_heads, config.head_dim, config.tie_word_embeddings) == (2, 32, True)
    state = torch.get_rng_state()
    model = build_model(tiny_config(500), seed=0)
    assert torch.equal(state, torch.get_rng_state())
    assert 0.9e6 < count_parameters(model) - 500 * 128 < 1.1e6
    assert model.dtype == torch.float32
    same, other = build_model(tiny_config(500), seed=0), build_model(tiny_config(500), seed=1)
    pairs = list(zip(model.state_dict().values(), same.state_dict().values(), other.state_dict().values()))
    assert all(torch.equal(a, b) for a, b, _ in pairs)
    assert not all(torch.equal(a, c) for a, _, c in pairs)


def test_perturb_answer_changes_one_move():
    rng = np.random.default_rng(0)
    for _ in range(50):
        noisy = perturb_answer("<answer>U U R D</answer>", rng)
        moves = noisy.removeprefix("<answer>").removesuffix("</answer>").split()
        assert noisy != "<answer>U U R D</answer>"
        assert len(moves) in (3, 4) and set(moves) <= {"U", "D", "L", "R"}
    assert perturb_answer("no answer here", rng) == "no answer here"


def test_demonstrations_are_oracle_answers_and_deterministic():
    demos = collect_demonstrations("plan-path-v0", range(10), np.random.default_rng(1))
    assert demos == collect_demonstrations("plan-path-v0", range(10), np.random.default_rng(1))
    assert {demo.agent for demo in demos} == {"tool", "plan"}
    env = pettingllms.make("plan-path-v0")
    env.reset(seed=0)
    assert demos[0] == type(demos[0])("tool", str(env.observe("tool")), env.unwrapped.solution())
    assert any("Last turn" in demo.prompt for demo in demos) or len(demos) == 20


def test_demonstrations_stop_at_the_same_count_per_role():
    import itertools

    team = collect_demonstrations("plan-path-v0", itertools.count(), np.random.default_rng(0), per_role=25)
    alone = collect_demonstrations(
        "plan-path-v0", itertools.count(), np.random.default_rng(0), workflow="single", per_role=25
    )
    assert Counter(d.agent for d in team) == {"tool": 25, "plan": 25}
    assert Counter(d.agent for d in alone) == {"plan": 25}
    with pytest.raises(ValueError, match="fewer than per_role"):
        collect_demonstrations("plan-path-v0", range(2), np.random.default_rng(0), per_role=25)
    for env_id in ("bargain-v0", "code-v0"):  # before any episode: these envs have nothing to demonstrate
        with pytest.raises(ValueError, match=f"'{env_id}' has no solver demonstrations"):
            collect_demonstrations(env_id, range(2), np.random.default_rng(0))


def test_the_correct_program_is_the_envs_solver_or_the_program_of_the_problem_at_hand():
    from pettingllms.warmstart.math_programs import write_program
    from pettingllms.warmstart.tool_programs import PROGRAMS

    sudoku = pettingllms.make("sudoku-v0", workflow="mas")
    sudoku.reset(seed=0)
    assert correct_program(sudoku.unwrapped) == PROGRAMS["sudoku-v0"].correct
    math = pettingllms.make("math-v0", workflow="mas")
    programs = set()
    for seed in range(3):
        math.reset(seed=seed)
        programs.add(correct_program(math.unwrapped))
        assert correct_program(math.unwrapped) == write_program(math.unwrapped.problem.problem)
    assert len(programs) == 3
    bargain = pettingllms.make("bargain-v0")
    bargain.reset(seed=0)
    with pytest.raises(ValueError, match="bargain-v0.*has no tool programs"):
        correct_program(bargain.unwrapped)


def test_the_plan_agent_is_taught_to_keep_a_solving_proposal_and_to_solve_a_wrong_one_itself():
    """Noisy direct proposals: a right one is copied as shown (never edited), a wrong one answered from the map."""
    demos = collect_demonstrations(
        "plan-path-v0", range(40), np.random.default_rng(2), tool_noise=0.5, plan_noise=0.0
    )
    env = pettingllms.make("plan-path-v0")
    kept = solved_alone = 0
    for tool, plan in zip(demos[::2], demos[1::2], strict=True):
        assert (tool.agent, plan.agent) == ("tool", "plan")
        shown = plan.prompt.split("Proposal: proposed ", 1)[1].split(";", 1)[0]
        if "it would solve the puzzle" in plan.prompt:
            assert plan.target == f"<answer>{shown}</answer>"
            kept += 1
        else:
            assert plan.target != f"<answer>{shown}</answer>"
            solved_alone += 1
    assert kept and solved_alone
    env.close()


@needs_bwrap
def test_tool_demonstrations_mix_programs_imperfect_programs_and_answers_and_the_plan_copies_what_solves():
    from pettingllms.warmstart.tool_programs import BFS, BUGGY_BFS, as_tool_call

    demos = collect_demonstrations(
        "plan-path-v0",
        range(30),
        np.random.default_rng(0),
        tool_programs=0.6,
        program_bugs=0.5,
        plan_noise=0.0,
    )
    tool = [d.target for d in demos if d.agent == "tool"]
    kinds = Counter(
        "bfs"
        if t == as_tool_call(BFS)
        else "buggy"
        if t in map(as_tool_call, BUGGY_BFS.values())
        else "answer"
        for t in tool
    )
    assert set(kinds) == {"bfs", "buggy", "answer"}
    for tool_demo, plan_demo in zip(demos[::2], demos[1::2], strict=True):
        if tool_demo.target == as_tool_call(
            BFS
        ):  # the program ran on the map it read from stdin and solved it
            assert (
                "Output (status ok):" in plan_demo.prompt and "it would solve the puzzle" in plan_demo.prompt
            )
            shown = plan_demo.prompt.split("Proposal: proposed ", 1)[1].split(";", 1)[0]
            assert plan_demo.target == f"<answer>{shown}</answer>"


@pytest.mark.usefixtures("one_torch_thread")
def test_ensure_tiny_model_builds_then_reuses(monkeypatch, tmp_path):
    monkeypatch.setenv("PETTINGLLMS_HOME", str(tmp_path))
    rng_states = (torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy())
    options = {"demo_episodes": 24, "eval_episodes": 2, "batch_size": 8}
    folder = ensure_tiny_model("plan-path-v0", sft_steps=4, **options)
    assert torch.equal(rng_states[0], torch.get_rng_state()) and rng_states[1] == random.getstate()
    assert np.array_equal(rng_states[2], np.random.get_state()[1])
    assert folder == tmp_path / "models" / "tiny-plan-path-v0-mas-v2"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_dir()) == ["models", folder.name]
    manifest = read_manifest(folder)
    assert manifest["settings"]["sft_steps"] == 4 and manifest["settings"]["env_id"] == "plan-path-v0"
    assert manifest["sft"]["probe_loss_after"] < manifest["sft"]["probe_loss_before"]  # the warm start learns
    assert manifest["evaluation"]["success_before"] is not None
    assert set(manifest["demonstrations"]["prompt_tokens"]) == {"tool", "plan"}

    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny_model("plan-path-v0", sft_steps=4, **options) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp  # reused, not rebuilt
    with pytest.warns(UserWarning, match="sft_steps=5"):
        assert ensure_tiny_model("plan-path-v0", sft_steps=5, **options) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp

    policy = HFPolicy.from_pretrained(folder, seed=0)
    generation = policy.generate(["# plan-path-v0"], 2, SamplingConfig(max_new_tokens=4))[0]
    assert len(generation) == 2 and all(len(g.completion_ids) >= 1 for g in generation)


@pytest.mark.usefixtures("one_torch_thread")
def test_a_tagged_warm_start_with_programs_lives_beside_the_default_and_counts_its_demonstrations(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("PETTINGLLMS_HOME", str(tmp_path))
    options = {"demos_per_role": 12, "eval_episodes": 0, "batch_size": 8, "sft_steps": 1}
    folder = ensure_tiny_model(
        "plan-path-v0", tag="mini", tool_programs=0.5, program_bugs=0.5, plan_noise=0.6, **options
    )
    assert folder.name == "tiny-plan-path-v0-mas-mini-v2" and folder != tiny_model_dir("plan-path-v0", "mas")
    manifest = read_manifest(folder)
    assert manifest["demonstrations"]["examples_per_agent"] == {"tool": 12, "plan": 12}
    assert manifest["settings"]["tool_programs"] == 0.5 and manifest["settings"]["demos_per_role"] == 12
    assert manifest["settings"]["plan_noise"] == manifest["demonstrations"]["plan_noise"] == 0.6
    with pytest.raises(ValueError, match="tag="):
        ensure_tiny_model("plan-path-v0", tag="../elsewhere", **options)


@pytest.mark.usefixtures("one_torch_thread")
def test_a_runs_warm_start_recipe_is_built_once_into_its_own_folder(monkeypatch, tmp_path):
    pytest.importorskip("trl")
    from pettingllms.core.errors import ConfigError
    from pettingllms.trainers.policies.model_source import starting_model
    from pettingllms.trainers.settings.arguments import parse
    from pettingllms.warmstart.build import recipe_tag

    monkeypatch.setenv("PETTINGLLMS_HOME", str(tmp_path))
    recipe = {"demos_per_role": 12, "sft_steps": 1, "batch_size": 8, "tool_programs": 0.5}
    argv = ["--output_dir", str(tmp_path / "run"), "--tiny_warm_start", json.dumps(recipe)]
    lines: list[str] = []
    folder = Path(starting_model("tiny", parse(argv), lines.append))
    assert folder == tiny_model_dir("plan-path-v0", "mas", tag=recipe_tag(recipe, {"size": 7}))
    assert folder.name.startswith("tiny-plan-path-v0-mas-recipe_") and "building" in lines[0]
    assert {k: read_manifest(folder)["settings"][k] for k in recipe} == recipe
    assert read_manifest(folder)["settings"]["eval_episodes"] == 0  # the run evaluates the model itself
    assert (
        recipe_tag(dict(reversed(recipe.items()))) == recipe_tag(recipe) != recipe_tag({**recipe, "seed": 1})
    )
    assert recipe_tag(recipe, {"size": 7}) != recipe_tag(recipe, {"size": 5})  # each setting its own build
    lines.clear()
    assert Path(starting_model("tiny", parse(argv), lines.append)) == folder and lines == []  # cached
    with pytest.raises(
        ConfigError, match=r"tiny_warm_start: unknown warm-start setting\(s\) \['steps'\]; allowed"
    ):
        parse(["--tiny_warm_start", '{"steps": 3}'])
    parse(
        ["--tiny_warm_start", '{"sft_steps": 3}', "--model_name_or_path", "qwen3-test"]
    )  # ignored, not refused
    with pytest.raises(ConfigError, match="tiny_warm_start=.*sft_steps=-1"):
        starting_model("tiny", parse([*argv[:2], "--tiny_warm_start", '{"sft_steps": -1}']), lines.append)


@pytest.mark.usefixtures("one_torch_thread")
def test_one_warm_start_can_cover_several_workflows(monkeypatch, tmp_path):
    """ "mas+single": episode i demonstrates workflow i mod 2, so the single agent's prompts are in the data too."""
    from pettingllms.warmstart.demos import collect_demonstrations

    monkeypatch.setenv("PETTINGLLMS_HOME", str(tmp_path))
    folder = ensure_tiny_model(
        "plan-path-v0", workflow="mas+single", sft_steps=2, demo_episodes=8, eval_episodes=1, batch_size=8
    )
    assert folder.name == "tiny-plan-path-v0-mas+single-v2"
    manifest = read_manifest(folder)
    rng = np.random.default_rng(0)
    team = collect_demonstrations("plan-path-v0", range(0, 8, 2), rng, workflow="mas")
    alone = collect_demonstrations("plan-path-v0", range(1, 8, 2), rng, workflow="single")
    assert {demo.agent for demo in alone} == {"plan"} and "tool" in {demo.agent for demo in team}
    assert manifest["demonstrations"]["examples"] == len(team) + len(alone)
    assert manifest["settings"]["workflow"] == "mas+single"


@pytest.mark.usefixtures("one_torch_thread")
def test_a_build_that_reports_its_phases_shows_the_fine_tuning_progress_and_a_silent_one_does_not(
    monkeypatch, tmp_path, capfd
):
    monkeypatch.setenv("PETTINGLLMS_HOME", str(tmp_path))
    options = {"demos_per_role": 8, "eval_episodes": 0, "batch_size": 8, "sft_steps": 3}
    lines = []
    ensure_tiny_model("plan-path-v0", tag="shown", log=lines.append, **options)
    shown = capfd.readouterr().err
    assert "3/3" in shown and any("supervised fine-tuning, 3 steps" in line for line in lines)
    ensure_tiny_model("plan-path-v0", tag="silent", **options)
    assert "3/3" not in capfd.readouterr().err


@needs_bwrap
@pytest.mark.parametrize("env_id", ["sokoban-v0", "sudoku-v0"])
def test_each_puzzles_tool_demonstrations_are_its_own_solver_and_its_variants(env_id):
    from pettingllms.warmstart.tool_programs import PROGRAMS, as_tool_call

    programs = PROGRAMS[env_id]
    demos = collect_demonstrations(
        env_id, range(12), np.random.default_rng(0), tool_programs=1.0, program_bugs=0.5
    )
    tool = Counter(d.target for d in demos if d.agent == "tool")
    assert as_tool_call(programs.correct) in tool
    assert set(tool) <= {as_tool_call(p) for p in (programs.correct, *programs.variants.values())}
    assert len(set(tool)) >= 3  # the correct solver and at least two of its three variants


@needs_bwrap
def test_math_demonstrations_show_the_problems_program_and_the_reasoner_copies_a_right_tool_answer():
    from pettingllms.warmstart.math_programs import write_program
    from pettingllms.warmstart.tool_programs import as_tool_call

    demos = collect_demonstrations(
        "math-v0", range(40), np.random.default_rng(0), tool_programs=0.6, program_bugs=0.3, plan_noise=0.6
    )
    programs = copied = 0
    for demo in demos:
        problem = demo.prompt.split("## Problem\n")[1].split("\n## ")[0]
        if demo.agent == "tool" and demo.target.startswith("```python"):
            programs += demo.target == as_tool_call(write_program(problem))
        if demo.agent == "reasoner" and "The tool agent's answer" in demo.prompt:
            shown = demo.prompt.split("## The tool agent's answer\n")[1].split("\n")[0]
            copied += demo.target == f"\\boxed{{{shown}}}"
    assert programs >= 5 and copied >= 3  # correct programs, and right tool answers copied on a later turn
    assert {d.agent for d in demos} == {"reasoner", "tool"}


def test_a_perturbed_math_answer_is_another_number():
    from pettingllms.warmstart.demos import perturb_number

    rng = np.random.default_rng(0)
    for answer in ("\\boxed{0}", "\\boxed{1}", "\\boxed{-\\frac{25}{4}}", "\\boxed{17303}"):
        assert all(perturb_number(answer, rng) != answer for _ in range(30))
    assert perturb_number("\\boxed{x}", rng) == "\\boxed{x}"


def test_a_cached_build_is_questioned_only_for_settings_that_change_its_weights(tmp_path):
    import json
    import warnings

    from pettingllms.warmstart import build

    built = build.WarmStartSettings(env_id="plan-path-v0", eval_episodes=0)
    (tmp_path / build.MANIFEST).write_text(json.dumps({"settings": built.to_json()}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # another evaluation size is not another model: no warning
        build.warn_if_different(tmp_path, dataclasses.replace(built, eval_episodes=200))
    with pytest.warns(
        UserWarning, match=r"built with other settings: sft_steps=7 \(built: \d+\); pass"
    ) as caught:
        build.warn_if_different(tmp_path, dataclasses.replace(built, sft_steps=7, eval_episodes=200))
    assert "eval_episodes" not in str(caught[0].message)
    older = {key: value for key, value in built.to_json().items() if key != "plan_noise"}  # before the field
    (tmp_path / build.MANIFEST).write_text(json.dumps({"settings": older}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a field the build predates counts as its default
        build.warn_if_different(tmp_path, built)
    with pytest.warns(UserWarning, match=r"plan_noise=0.6 \(built: 0.2\)"):
        build.warn_if_different(tmp_path, dataclasses.replace(built, plan_noise=0.6))
