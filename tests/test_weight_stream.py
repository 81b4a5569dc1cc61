"""A weight sync sends one parameter at a time (`backends.weights.model_stream`): names and shapes are known before
anything is gathered, each sharded parameter is gathered only when the stream reaches it, and chunks are cut and
cast as they go. (Under torchrun with real FSDP2 shards: tests/test_distributed.py compares the stream of a
sharded model with the one-process weights.)"""

import pytest

torch = pytest.importorskip("torch")

from pettingllms.backends.weights import mapping_stream, model_stream, weight_chunks  # noqa: E402


class Sharded:
    """A stand-in for a DTensor: `full_tensor()` gathers (here: returns) the whole value and counts the gathers."""

    gathers = 0

    def __init__(self, value):
        self.value, self.shape = value, value.shape

    def full_tensor(self):
        Sharded.gathers += 1
        return self.value


class TinyLM(torch.nn.Module):
    """Embeddings tied to the head, one layer: a state dict with a tied `lm_head.weight`."""

    def __init__(self, sharded: bool = False):
        super().__init__()
        self.embed = torch.nn.Embedding(11, 4)
        self.layer = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 11, bias=False)
        self.head.weight = self.embed.weight
        self.sharded = sharded

    def get_input_embeddings(self):
        return self.embed

    def get_output_embeddings(self):
        return self.head

    def state_dict(self, *args, **kwargs):
        state = {
            name.replace("head.", "lm_head."): v for name, v in super().state_dict(*args, **kwargs).items()
        }
        return {name: Sharded(v) for name, v in state.items()} if self.sharded else state


def test_a_stream_gathers_each_parameter_only_when_it_reaches_it():
    Sharded.gathers = 0
    stream = model_stream(TinyLM(sharded=True))
    assert stream.shapes == {"embed.weight": (11, 4), "layer.weight": (4, 4), "layer.bias": (4,)}
    assert Sharded.gathers == 0  # names and shapes come first, with nothing gathered
    tensors = stream.tensors()
    name, first = next(tensors)
    assert name == "embed.weight" and Sharded.gathers == 1
    assert [name for name, _ in tensors] == ["layer.weight", "layer.bias"] and Sharded.gathers == 3


def test_a_models_stream_sends_a_tied_head_once_and_chunks_cast_on_the_way():
    model = TinyLM()
    stream = model_stream(model)
    assert "lm_head.weight" not in stream.shapes
    weights = dict(stream.tensors())
    assert all(torch.equal(weights[name], model.state_dict()[name]) for name in weights)
    chunks = list(weight_chunks(stream, dtype=torch.bfloat16, max_bytes=60))
    assert [list(chunk) for chunk in chunks] == [["embed.weight"], ["layer.weight", "layer.bias"]]
    assert all(t.dtype == torch.bfloat16 and t.device.type == "cpu" for c in chunks for t in c.values())
    assert list(weight_chunks(weights, max_bytes=60))[0].keys() == chunks[0].keys()  # a mapping streams alike
    assert mapping_stream(weights).shapes == stream.shapes
