"""The longest prompt each paper config's env gives an agent, in Qwen3 tokens (chat template included), when every
completion before it fills the whole budget: what the memory plan's `plan_prompt_tokens` (and so each vLLM
engine's `max_model_len`) must cover, measured per env instead of assumed alike.

    .venv/bin/python scripts/prompt_lengths.py          # print the figures, per env
    .venv/bin/python scripts/prompt_lengths.py --check  # exit 1 if a paper config's plan_prompt_tokens is below them
    .venv/bin/python scripts/prompt_lengths.py --env math  # the configs of one env only

Every agent of every turn answers with a completion of `max_completion_length` tokens: a fenced Python program
(one long comment line, then a print of 40,000 characters), which the envs that run code run and show the next
agent as far as they show code and output, and no answer the env can accept (so each turn runs: the episode lasts
its whole `max_turns`), on `SEEDS` training instances.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted((ROOT / "configs" / "paper").glob("*/*.yaml"))
SEEDS = (0, 1, 2)
FILLER = " lorem"
"""One Qwen3 token (with its leading space): the comment of the filler program is this word, repeated."""


def filler_program(tokenizer, tokens: int) -> str:
    """The longest fenced Python program of at most `tokens` tokens made of a comment of `FILLER`s and a print
    of 40,000 characters (more than any env shows of a program's output)."""
    frame = "```python\n#{}\nprint('0 ' * 20000)\n```"

    def length(words: int) -> int:
        return len(tokenizer.encode(frame.format(FILLER * words), add_special_tokens=False))

    words = tokens - length(0)
    while length(words) > tokens:  # the comment's first word may merge with '#'
        words -= 1
    while length(words + 1) <= tokens:
        words += 1
    return frame.format(FILLER * words)


def longest_prompt(config: Path) -> tuple[int, int]:
    """(longest prompt in tokens, the config's plan_prompt_tokens) for the paper config `config`."""
    import pettingllms
    from pettingllms.backends.chat import chat_prompt_ids
    from pettingllms.models.qwen3_tokenizer import qwen3_tokenizer
    from pettingllms.trainers.settings.arguments import parse

    args = parse(["--config", str(config), "--use_cpu", "true", "--bf16", "false", "--output_dir", "unused"])
    tokenizer = qwen3_tokenizer()
    filler = filler_program(tokenizer, args.max_completion_length)
    longest = 0
    for seed in SEEDS:
        env = pettingllms.make(
            args.env_id, workflow=args.workflow, alpha=args.alpha, max_turns=args.max_turns, **args.env_kwargs
        )
        env.reset(seed=seed, options={"split": "train"})
        for _ in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            ids = chat_prompt_ids(tokenizer, str(observation), enable_thinking=args.enable_thinking)
            longest = max(longest, len(ids))
            env.step(filler)
        env.close()
    return longest, args.plan_prompt_tokens


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a config plans for shorter prompts")
    parser.add_argument("--env", help="only the configs of this env (their file name: math, code, ...)")
    options = parser.parse_args()
    short = []
    for config in CONFIGS:
        if options.env is not None and config.stem != options.env:
            continue
        longest, planned = longest_prompt(config)
        name = f"{config.parent.name}/{config.stem}"
        print(f"{name}: longest prompt {longest} tokens; plan_prompt_tokens {planned}")
        if longest > planned:
            short.append(name)
    if options.check and short:
        print(f"plan_prompt_tokens below the longest prompt: {short}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
