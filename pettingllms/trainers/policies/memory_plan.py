"""The memory planner: per GPU, the peak of generation and of the update, computed before anything loads.

For every device a run uses, `plan_run` adds up (in bytes). Precision: the trained weights, their gradients and
their AdamW states are float32 whatever `bf16` says (mixed precision: ~16 bytes a parameter before activations);
`bf16` is the compute dtype (`ATGRPOConfig.compute_dtype`) of activations, the KV cache, the KL reference model,
a frozen LoRA base, and the copy of the weights generation runs on.

- resident all run long, per policy on the device: its float32 weights (the device's shard under a launcher), its
  AdamW states (two float32 values per trainable parameter plus a float32 step per tensor) and, with `beta != 0`,
  its KL reference model's weights;
- generation (`generation_backend='hf'`): the weights it samples from beyond the resident ones (a copy in the
  compute dtype when that is not float32, and for `lora_per_role` a merged copy per adapter unless
  `lora_generation='adapters'`; else, under a launcher, the gathered rest of the float32 weights), the KV
  cache of one sampler call (`2 x layers x kv_heads x head_dim` values per token per row, in the compute dtype,
  for the call's rows at `plan_prompt_tokens + max_completion_length` tokens) and one decoding step's logits;
  after each update, the sync into that copy gathers one parameter at a time (float32 and its cast);
- the update of one policy at a time: its float32 gradients (its shard), the activations one micro-batch saves for
  the backward pass (`activation_bytes`), the fused log-prob head's float32 buffers of the backward (a
  vocabulary-sized weight gradient and the micro-batch's hidden-state gradient), and under a launcher what FSDP2
  holds gathered at once (the root group with the embeddings, the layer computing and the next one prefetched);
- with vLLM (`generation_backend='vllm'`), per engine: `max_model_len` is the run's longest row (prompt +
  completion), and its `gpu_memory_utilization` holds its weights in the compute dtype, the KV cache of at least
  one full-length row, and `ENGINE_OVERHEAD_BYTES` (profiling pass, CUDA graphs, workspace); an engine sleeps
  through its policy's update (vLLM's sleep mode level 1: weights to host memory, KV cache freed), so the update
  is planned beside `ENGINE_ASLEEP_BYTES` per engine, not beside the engine's peak.

Weights, optimizer states and the KV cache are exact (`tests/test_memory_plan.py` measures them on small models);
the vLLM figures (`ENGINE_OVERHEAD_BYTES`, `ENGINE_ASLEEP_BYTES`) are assumptions that no GPU has checked yet;
the activations are a formula for Qwen3-style decoder layers (Qwen3, and Llama/Qwen2 without the query/key norms),
derived from the tensors PyTorch saves for the backward pass and checked against saved-tensor hooks within 25%.

What it can choose it chooses, on the fullest device: rows per sampler call (`max_generation_rows`, whole groups of
K) and the update's micro-batch (`per_device_train_batch_size`), neither of which changes what is computed (a
call split between groups samples the same groups; micro-batches weigh every sample as one batch would), and with
vLLM each engine's `gpu_memory_utilization` (what the update workers on the engines' GPU leave, shared out). A run
that does not fit even at one group and one row is refused with the numbers and the settings that would make it
fit (`MemoryPlan.refusal`). `pettingllms-train --plan` prints the plan and exits.
"""

from __future__ import annotations

import dataclasses
import math

from pettingllms.trainers.policies.model_shapes import ModelShape

GIB = 2**30
FLOAT32 = 4
RESERVE = 0.1
"""The share of each GPU a plan leaves free: the CUDA context, kernels' workspaces, the allocator's fragmentation
and the transient tensors of the backward pass (not computed here)."""
ATTENTION_MASK_BYTES = 1.25
"""Bytes per (row, query, key) and layer, per byte of the activations' dtype, that PyTorch's scaled-dot-product
attention saves for a padded batch (its attention mask): measured, as every micro-batch of unequal lengths has
one."""


def activation_bytes(
    shape: ModelShape, rows: int, tokens: int, dtype_bytes: int, *, checkpointing: bool
) -> int:
    """Bytes the forward of `rows` rows of `tokens` tokens saves for the backward pass (TRL's fused log-prob
    head: no full logits), the rows padded to unequal lengths as an update's micro-batches are. Per token and
    decoder layer: the inputs of the projections and of the MLP's activation and the attention's output
    (`4h + 4i + 4q + 3kv` values in the activations' dtype; the padded batch's attention keeps one more copy of its
    output), the RMS norms' float32 tensors (`2h`, and `q + kv` with per-head query/key norms), plus the attention
    mask's `ATTENTION_MASK_BYTES` per query and key.
    With activation checkpointing each layer keeps only its input, and the backward pass recomputes one layer at
    a time."""
    if checkpointing:
        one_layer = _layer_activations(
            shape, rows, tokens, dtype_bytes
        )  # the recomputed layer's activations live beside the saved inputs
        return saved_activation_bytes(shape, rows, tokens, dtype_bytes, checkpointing=True) + int(one_layer)
    return saved_activation_bytes(shape, rows, tokens, dtype_bytes, checkpointing=False)


def saved_activation_bytes(
    shape: ModelShape, rows: int, tokens: int, dtype_bytes: int, *, checkpointing: bool
) -> int:
    """The part of `activation_bytes` the forward saves (with activation checkpointing: every layer's input and
    what the layers outside the checkpointed ones keep), without the layer the backward pass recomputes."""
    outside_layers = rows * tokens * (dtype_bytes * 2 * shape.hidden + FLOAT32 * shape.hidden + 40)
    if checkpointing:
        return int(shape.layers * rows * tokens * dtype_bytes * shape.hidden + outside_layers)
    return int(shape.layers * _layer_activations(shape, rows, tokens, dtype_bytes) + outside_layers)


def _layer_activations(shape: ModelShape, rows: int, tokens: int, dtype_bytes: int) -> float:
    """What one decoder layer saves for `rows` x `tokens` tokens (see `activation_bytes`)."""
    q, kv, hidden = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim, shape.hidden
    per_token = dtype_bytes * (4 * hidden + 4 * shape.intermediate + 4 * q + 3 * kv) + 28
    per_token += FLOAT32 * (2 * hidden + (q + kv if shape.qk_norm else 0))
    return rows * tokens * per_token + ATTENTION_MASK_BYTES * dtype_bytes * rows * tokens**2


ENGINE_OVERHEAD_BYTES = 3 * GIB
"""What a vLLM engine holds beside its weights and KV cache (assumed, not measured on a GPU): the activations of
its profiling pass, CUDA graphs, the sampler's buffers and the CUDA context of its process."""
ENGINE_ASLEEP_BYTES = 1 * GIB
"""What a sleeping vLLM engine keeps on its GPU (assumed): its process's CUDA context and graphs' pools."""


def adamw_bytes(trainable: int, tensors: int, dtype_bytes: int = FLOAT32) -> int:
    """torch's AdamW state: `exp_avg` and `exp_avg_sq` per parameter in its dtype, a float32 `step` per tensor."""
    return 2 * trainable * dtype_bytes + FLOAT32 * tensors


def head_backward_bytes(shape: ModelShape, rows: int, tokens: int) -> int:
    """The float32 buffers of the fused log-prob head's backward: the output embedding's weight gradient
    (vocabulary x hidden) and the gradient of the micro-batch's hidden states."""
    return FLOAT32 * shape.hidden * (shape.vocab + rows * tokens)


@dataclasses.dataclass(frozen=True)
class PolicyMemory:
    """One policy's bytes on one device (see the module docstring)."""

    name: str
    weights: int
    """Its float32 weights on the device (its shard under a launcher)."""
    generation_copy: int
    """The copy of the weights in the compute dtype that in-process sampling uses (resident; 0 without one)."""
    generation_gather: int
    """What sampling from the float32 weights gathers beyond the shard under a launcher (while it runs)."""
    gradients: int
    optimizer: int
    reference: int
    gathered: int
    """What a sharded update holds gathered at once (0 without a launcher)."""
    sync: int
    """The transient of a sync (`_sync_bytes`): one parameter gathered and cast, and an engine's reload."""

    @property
    def resident(self) -> int:
        return self.weights + self.optimizer + self.reference + self.generation_copy


@dataclasses.dataclass(frozen=True)
class DevicePlan:
    """A device's policies and its peaks, at the plan's rows per call and micro-batch."""

    device: str
    budget: int
    policies: tuple[PolicyMemory, ...]
    kv_cache: int
    logits: int
    activations: int
    head_backward: int
    engines_awake: int = 0
    """The vLLM engines on this device while they generate (their `gpu_memory_utilization` shares)."""
    engines_asleep: int = 0
    """The same engines asleep, through an update."""

    @property
    def _resident(self) -> int:
        return sum(p.resident for p in self.policies)

    @property
    def generation_peak(self) -> int:
        gathered = sum(p.generation_gather for p in self.policies)
        return self._resident + gathered + self.kv_cache + self.logits + self.engines_awake

    @property
    def update_peak(self) -> int:
        largest = max(p.gradients + p.gathered for p in self.policies)
        return self._resident + largest + self.activations + self.head_backward + self.engines_asleep

    @property
    def sync_peak(self) -> int:
        return self._resident + max(p.sync for p in self.policies) + self.engines_awake

    @property
    def peak(self) -> int:
        return max(self.generation_peak, self.update_peak, self.sync_peak)

    @property
    def usable(self) -> int:
        """The bytes a plan may fill: the budget less `RESERVE`."""
        return int(self.budget * (1 - RESERVE))

    @property
    def fits(self) -> bool:
        return self.peak <= self.usable


@dataclasses.dataclass(frozen=True)
class Hardware:
    """The GPUs a plan is for: `gpus` devices of `gpu_bytes` each, and the number of launched ranks."""

    gpus: int
    gpu_bytes: int
    ranks: int = 1

    @classmethod
    def visible(cls) -> Hardware:
        """This process's GPUs (the smallest one's memory) and the launcher's ranks."""
        import torch

        from pettingllms.parallel.devices import launched_world_size, visible_gpus

        count = visible_gpus()
        smallest = min((torch.cuda.get_device_properties(i).total_memory for i in range(count)), default=0)
        return cls(count, smallest, launched_world_size())

    def describe(self) -> str:
        per_rank = (
            f", {self.ranks} ranks (torchrun): every policy sharded over them" if self.ranks > 1 else ""
        )
        return f"{self.gpus} GPU(s) of {self.gpu_bytes / GIB:.1f} GiB{per_rank}"


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """The plan of a run on `hardware` (see the module docstring); `fits` is False when nothing chosen fits."""

    hardware: Hardware
    sources: dict[str, str]
    tokens: int
    rows_per_call: int
    generation_rows: int | None
    micro_batch: int | None
    asked_micro_batch: int
    devices: tuple[DevicePlan, ...]
    advice: tuple[str, ...]
    engine_share: float | None = None
    """With `generation_backend='vllm'`: the `gpu_memory_utilization` each engine gets (each policy's engine runs
    on its policy's device, beside its update worker), None otherwise."""
    engine_problem: str | None = None
    """Why the engines do not fit beside the update, if they do not."""

    @property
    def fits(self) -> bool:
        return (
            self.generation_rows is not None and self.micro_batch is not None and self.engine_problem is None
        )

    def settings(self, asked_engine: dict | None = None) -> dict:
        """The settings the plan chose (to apply to the run's config): the micro-batch, the rows per sampler
        call, and with vLLM each engine's `gpu_memory_utilization` and `max_model_len` (the longest row); what
        the config's `vllm_engine_kwargs` (`asked_engine`) set itself is kept."""
        if not self.fits:
            return {}
        chosen: dict = {"per_device_train_batch_size": self.micro_batch}
        if self.generation_rows < self.rows_per_call:
            chosen["max_generation_rows"] = self.generation_rows
        if self.engine_share is not None:
            engine = {"gpu_memory_utilization": self.engine_share, "max_model_len": self.tokens}
            chosen["vllm_engine_kwargs"] = {**engine, **(asked_engine or {})}
        return chosen

    def render(self) -> str:
        """The plan as a table (GiB), one row per device, and what was chosen."""
        lines = [
            f"memory plan: {', '.join(f'{name}: {source}' for name, source in self.sources.items())} on "
            f"{self.hardware.describe()}; rows of {self.tokens} tokens (prompt + completion)",
            "devices   policies          weights  optimizer  reference  gen. copy  gradients  KV cache  "
            "activations   engines  generation peak  update peak  usable  fits",
        ]
        for label, device in _distinct(self.devices):
            cells = [
                sum(p.weights for p in device.policies),
                sum(p.optimizer for p in device.policies),
                sum(p.reference for p in device.policies),
                sum(p.generation_copy for p in device.policies),
                max(p.gradients for p in device.policies),
                device.kv_cache,
                device.activations + device.head_backward,
                device.engines_awake,
            ]
            names = ",".join(p.name for p in device.policies)
            lines.append(
                f"{label:<9} {names:<17} "
                + " ".join(f"{c / GIB:>9.1f}" for c in cells)
                + f"  {device.generation_peak / GIB:>15.1f}  {device.update_peak / GIB:>11.1f}  "
                f"{device.usable / GIB:>6.1f}  {'yes' if device.fits else 'NO'}"
            )
        idle = self.hardware.gpus - len(self.devices)
        if idle > 0:
            lines.append(f"{idle} GPU(s) idle: launch with torchrun to shard every policy over all of them")
        if self.fits:
            lines.append(
                f"chosen: {self.generation_rows} of {self.rows_per_call} rows per sampler call, micro-batch "
                f"{self.micro_batch} rows (asked {self.asked_micro_batch})"
                + (
                    f", gpu_memory_utilization {self.engine_share} and max_model_len {self.tokens} per vLLM "
                    "engine (each sleeps through its policy's update)"
                    if self.engine_share
                    else ""
                )
            )
        else:
            lines.append(self.refusal())
        return "\n".join(lines)

    def refusal(self) -> str:
        """One message: the fullest device's numbers at one group per call and one row per micro-batch, and the
        settings that would make the run fit."""
        if self.engine_problem is not None and self.micro_batch is not None:
            return f"the run does not fit: {self.engine_problem}; what would make it fit: {'; '.join(self.advice)}"
        device = max(self.devices, key=lambda d: d.peak)
        peaks = {"generation": device.generation_peak, "update": device.update_peak, "sync": device.sync_peak}
        phase = max(peaks, key=peaks.get)
        return (
            f"the run does not fit: {device.device} needs {device.peak / GIB:.1f} GiB at its {phase} peak even "
            f"with one group of K rows per sampler call and a micro-batch of one row (weights "
            f"{sum(p.weights for p in device.policies) / GIB:.1f}, optimizer "
            f"{sum(p.optimizer for p in device.policies) / GIB:.1f}, generation copy "
            f"{sum(p.generation_copy for p in device.policies) / GIB:.1f}, gradients "
            f"{max(p.gradients for p in device.policies) / GIB:.1f}, activations "
            f"{(device.activations + device.head_backward) / GIB:.1f}, "
            f"KV cache {device.kv_cache / GIB:.1f} GiB) and may use {device.usable / GIB:.1f} of its "
            f"{device.budget / GIB:.1f} GiB; what would make it "
            f"fit: {'; '.join(self.advice)}"
        )


def plan_run(args, agents: list[str], hardware: Hardware) -> MemoryPlan:
    """The memory plan of the run `args` (an `ATGRPOConfig`) for `agents` on `hardware` (module docstring)."""
    from pettingllms.runs.layout import map_agents
    from pettingllms.trainers.policies.model_shapes import shape_of

    names = list(dict.fromkeys(map_agents(args.policy_layout, args.agent_policies, agents).values()))
    sources = {name: args.agent_models.get(name, args.model_name_or_path) for name in names}
    layout = _Layout(args, {name: shape_of(source, args) for name, source in sources.items()}, hardware)
    share, problem = (None, None)
    if args.generation_backend == "vllm":  # the engines' share depends only on what stays resident
        share, problem = _engine_share(args, layout)
    rows_per_call = math.ceil(args.instances_per_step / hardware.ranks) * args.num_generations
    asked_rows = min(args.max_generation_rows or rows_per_call, rows_per_call)
    candidates_rows = range(asked_rows - asked_rows % args.num_generations, 0, -args.num_generations)
    rows = next(
        (
            r
            for r in candidates_rows
            if all(d.generation_peak <= d.usable for d in layout.devices(r, 1, share or 0.0))
        ),
        None,
    )

    def fits_at(micro_batch: int) -> bool:
        return all(d.fits for d in layout.devices(rows or 1, micro_batch, share or 0.0))

    micro = next((b for b in range(args.per_device_train_batch_size, 0, -1) if fits_at(b)), None)
    shown = layout.devices(rows or args.num_generations, micro or 1, share or 0.0)
    return MemoryPlan(
        hardware,
        sources,
        layout.tokens,
        rows_per_call,
        rows,
        micro,
        args.per_device_train_batch_size,
        shown,
        _advice(args),
        share,
        problem,
    )


def _engine_share(args, layout: _Layout) -> tuple[float | None, str | None]:
    """Each vLLM engine's `gpu_memory_utilization`, and why it is too small, if it is. An engine of a Ray rollout
    server has its bundle's GPU to itself; otherwise each policy's engine runs on its policy's device (every
    rank's, under a launcher), beside the update workers there, whose resident bytes stay while the engines
    generate (the engines sleep through the update, so the update's peak is not subtracted): each engine gets an
    equal part of what the resident bytes leave on the fullest device. It must hold the engine's weights in the
    compute dtype, one full-length row's KV cache and `ENGINE_OVERHEAD_BYTES`."""
    devices = layout.devices(1, 1)
    if args.distributed == "ray":
        share = math.floor(100 * devices[0].usable / devices[0].budget + 1e-9) / 100
        beside = "on its own GPU"
    else:
        shares = {  # what stays resident, and the transient of a sync into an awake engine
            d.device: (d.usable - d.sync_peak) / d.budget / len(d.policies) for d in devices
        }
        fullest = min(shares, key=shares.get)
        share = math.floor(100 * shares[fullest] + 1e-9) / 100
        beside = f"beside the update workers on {fullest}"
    budget = devices[0].budget
    need = max(engine_need(shape, layout.compute_bytes, layout.tokens) for shape in layout.shapes.values())
    if share * budget < need:
        return None, (
            f"each vLLM engine {beside} gets {max(share, 0.0):.2f} of its memory "
            f"({max(share, 0.0) * budget / GIB:.1f} GiB), less than an engine needs: weights, one "
            f"{layout.tokens}-token row's KV cache and {ENGINE_OVERHEAD_BYTES / GIB:.0f} GiB of overhead "
            f"({need / GIB:.1f} GiB)"
        )
    return share, None


def engine_need(shape: ModelShape, compute_bytes: int, tokens: int) -> int:
    """The least a vLLM engine of `shape` needs: its weights, one `tokens`-token row's KV cache, the overhead."""
    return (
        shape.parameters * compute_bytes
        + tokens * shape.kv_bytes_per_token(compute_bytes)
        + ENGINE_OVERHEAD_BYTES
    )


class _Layout:
    """The devices of a run on `hardware` and the policies each holds; `devices(rows, micro_batch)` are their
    plans at that many rows per sampler call and rows per micro-batch."""

    def __init__(self, args, shapes: dict[str, ModelShape], hardware: Hardware):
        self.args, self.shapes, self.hardware = args, shapes, hardware
        self.compute_bytes = _compute_bytes(args)
        memories = _policy_memories(args, shapes, hardware.ranks)
        if (
            hardware.ranks > 1 or args.policy_layout == "lora_per_role"
        ):  # every policy on every device it uses
            self.groups = [memories] * max(1, min(hardware.gpus, hardware.ranks))
        else:
            spread = max(1, hardware.gpus)
            self.groups = [memories[index::spread] for index in range(min(len(memories), hardware.gpus))]
        self.tokens = int(args.plan_prompt_tokens) + int(args.max_completion_length)

    def devices(self, rows: int, micro_batch: int, engine_share: float = 0.0) -> tuple[DevicePlan, ...]:
        """The devices' plans; `engine_share`: each vLLM engine's `gpu_memory_utilization` (one engine per
        policy, on its policy's device; Ray's rollout servers have GPUs of their own)."""
        size = self.compute_bytes
        widest = max(self.shapes.values(), key=lambda shape: shape.kv_bytes_per_token(1))
        in_process = self.args.generation_backend == "hf"  # vLLM engines hold their own KV cache
        kv = rows * self.tokens * widest.kv_bytes_per_token(size) if in_process else 0
        logits = rows * widest.vocab * (size + FLOAT32) if in_process else 0
        checkpointing = bool(self.args.activation_checkpointing)
        activations = max(
            activation_bytes(shape, micro_batch, self.tokens, size, checkpointing=checkpointing)
            for shape in self.shapes.values()
        )
        head = max(head_backward_bytes(shape, micro_batch, self.tokens) for shape in self.shapes.values())
        colocated = not in_process and self.args.distributed != "ray"  # one engine per policy on its device
        return tuple(
            DevicePlan(
                f"cuda:{index}",
                self.hardware.gpu_bytes,
                tuple(group),
                kv,
                logits,
                activations,
                head,
                engines_awake=int(len(group) * engine_share * self.hardware.gpu_bytes) if colocated else 0,
                engines_asleep=len(group) * ENGINE_ASLEEP_BYTES if colocated else 0,
            )
            for index, group in enumerate(self.groups)
        )


def _sync_bytes(shape: ModelShape, compute_bytes: int, sharded: bool, engine: bool) -> int:
    """The transient of one sync: the largest parameter cast to the compute dtype (gathered in float32 first
    when sharded); an engine's reload also holds its old and new weights at once (assumed: vLLM's
    `reload_weights` re-creates every parameter), where an in-process copy is overwritten in place."""
    cast = shape.largest_tensor * (compute_bytes + (FLOAT32 if sharded else 0))
    return cast + (shape.parameters * compute_bytes if engine else 0)


def _compute_bytes(args) -> int:
    """Bytes of a value in the compute dtype (activations, KV cache, generation copies, frozen weights)."""
    return 2 if args.bf16 or args.fp16 else FLOAT32


def _policy_memories(args, shapes: dict[str, ModelShape], ranks: int) -> list[PolicyMemory]:
    """Each policy's bytes on a device that holds it (its shard under a launcher); the adapters of
    `lora_per_role` are one entry: the frozen base model once in the compute dtype, every adapter's float32
    weights and states, one adapter's gradients, and in process with `lora_generation="merged"` a merged copy of
    the model per adapter in the compute dtype (a sync writes each layer's float32 sum before casting it)."""
    c = _compute_bytes(args)
    if args.policy_layout == "lora_per_role":
        shape = next(iter(shapes.values()))
        adapter = shape.lora_parameters(args.lora_r)
        tensors = 2 * len(shape.linear_shapes)
        weights = shape.parameters * c + len(shapes) * adapter * FLOAT32
        optimizer = len(shapes) * adamw_bytes(adapter, tensors)
        merged = args.generation_backend == "hf" and args.lora_generation == "merged"
        copies = len(shapes) * shape.parameters * c if merged else 0
        sync = 3 * shape.largest_tensor * FLOAT32 if merged else 0  # base, delta and their sum in float32
        return [PolicyMemory("adapters", weights, copies, 0, adapter * FLOAT32, optimizer, 0, 0, sync)]
    copy = args.generation_backend == "hf" and c < FLOAT32  # sampling runs on a copy in the compute dtype
    engine = args.generation_backend == "vllm"
    out = []
    for name, shape in shapes.items():
        full = shape.parameters * FLOAT32
        sharded = ranks > 1
        layer = sum(inputs * outputs for inputs, outputs in shape.linear_shapes) // shape.layers
        out.append(
            PolicyMemory(
                name,
                weights=math.ceil(full / ranks),
                generation_copy=shape.parameters * c if copy else 0,
                generation_gather=full - math.ceil(full / ranks) if not (copy or engine) else 0,
                gradients=math.ceil(full / ranks),
                optimizer=math.ceil(adamw_bytes(shape.parameters, shape.tensors) / ranks),
                reference=shape.parameters * c if args.beta != 0.0 else 0,
                gathered=(shape.largest_tensor + 2 * layer) * FLOAT32 if sharded else 0,
                sync=_sync_bytes(shape, c, sharded, engine) if copy or engine else 0,
            )
        )
    return out


def _advice(args) -> tuple[str, ...]:
    """The settings that lower the peaks, those the run does not use yet."""
    advice = []
    if not args.activation_checkpointing:
        advice.append(
            "activation_checkpointing: true (each layer keeps only its input for the backward pass)"
        )
    if not (args.bf16 or args.fp16):
        advice.append("bf16: true (half the bytes of activations, the KV cache and generation's weights)")
    advice.append(
        "launch with torchrun on more GPUs (float32 weights, gradients and optimizer states are split over the "
        "ranks)"
    )
    if args.policy_layout != "lora_per_role":
        advice.append("policy_layout: lora_per_role (one frozen base model, small adapters)")
    elif args.generation_backend == "hf" and args.lora_generation == "merged":
        advice.append("lora_generation: adapters (no merged copy of the model per adapter; slower sampling)")
    advice.append(f"a shorter max_completion_length (now {args.max_completion_length}) or plan_prompt_tokens")
    return tuple(advice)


def _distinct(devices: tuple[DevicePlan, ...]) -> list[tuple[str, DevicePlan]]:
    """Devices with the same policies and figures as one row, labelled with their range (cuda:0-7)."""
    rows: list[tuple[list[str], DevicePlan]] = []
    for device in devices:
        if rows and dataclasses.replace(rows[-1][1], device=device.device) == device:
            rows[-1][0].append(device.device)
        else:
            rows.append(([device.device], device))
    return [
        (names[0] if len(names) == 1 else f"{names[0]}-{names[-1].split(':')[1]}", d) for names, d in rows
    ]


def apply_plan(args, plan: MemoryPlan, log) -> None:
    """Refuse a run that does not fit (`ConfigError` with `plan.refusal()`); else set what the plan chose on
    `args`, saying what changed."""
    from pettingllms.core.errors import ConfigError

    if not plan.fits:
        raise ConfigError(plan.refusal())
    for name, value in plan.settings(args.vllm_engine_kwargs).items():
        if getattr(args, name) != value:
            log(f"memory plan: {name} {getattr(args, name)} -> {value} (pettingllms-train --plan shows why)")
            setattr(args, name, value)
