"""The train-step benchmark's update floor computes the gradient `PolicyUpdater` computes (TRL's GRPO loss), so
its tokens/s is a floor for the same work."""

import pytest
from scripts_loader import load_script

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from letters import unequal_samples as samples  # noqa: E402
from test_updater_weights import assert_same, gradients, updater_for  # noqa: E402

pytestmark = pytest.mark.usefixtures("letters_env")


def load_benchmark():
    return load_script("bench_train_step", "benchmarks")


@pytest.mark.parametrize("micro_batch", [2, 5])
def test_the_update_floor_has_the_updaters_gradient(tiny_model, tmp_path, micro_batch):
    updater = updater_for(tiny_model, tmp_path, "grpo", 8)
    updater.args.per_device_train_batch_size = micro_batch  # the cut, as test_updater_weights makes it
    updater.model.zero_grad()
    updater.accumulate_gradients(samples())
    want = gradients(updater.model)
    updater.model.zero_grad()
    floor = load_benchmark().FloorUpdate(
        updater.model, samples(), updater.processing_class, micro_batch, 1e-4, 1.0
    )
    floor.accumulate()
    assert_same(gradients(updater.model), want)


def test_the_forward_token_counts_are_the_floors_rows_and_the_updaters_prompt_tree():
    """Three groups of three candidates, prompts of 7, 5 and 9 tokens sharing 4 (`grouped_samples`): the floor
    runs 3 x (7 + 5 + 9) prompt tokens; the updater runs the shared 4 once, then what each group's prompt but its
    last token adds (2, 0, 4), then per sample its last prompt token; both run the 33 completion tokens."""
    from test_updater_weights import grouped_samples

    counts = load_benchmark().update_forward_tokens(grouped_samples(), micro_batch=9)
    assert counts == {"floor_forward_tokens": 3 * (7 + 5 + 9) + 33, "ours_forward_tokens": 4 + 2 + 4 + 9 + 33}
