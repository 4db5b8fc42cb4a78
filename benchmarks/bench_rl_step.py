"""One RL update step, side by side: the farm trainer's passes against one pass an episode and TRL 1.16's own.

All run TRL's ``GRPOTrainer`` on the same fixed rollouts (two groups of four episodes of
~2k-token prompts and 200-token completions, 20 sampled tokens each — the shape of a farm step
on the embedded planner), LoRA over a bfloat16 base where the CPU has native bfloat16:

- ``shared``: ``train rl --share-prompts`` (training/grpo.py): the step in one micro-batch, each
  group's prompt run once and its keys and values shared by the group's completions;
- ``per-episode``: the default, one episode a micro-batch, the LM head over the completion only;
- ``fused``: one episode a micro-batch through TRL's own fused LM head over every position.

Prints seconds per step and the ratios; ``--only MODE`` runs one, to read its peak RSS alone.

    python benchmarks/bench_rl_step.py --threads 2
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=1900)
    ap.add_argument("--completion", type=int, default=200)
    ap.add_argument("--only", choices=("shared", "per-episode", "fused"), default=None)
    args = ap.parse_args()

    import torch
    from peft import PeftModel
    from transformers import AutoTokenizer

    from planner_runtime.planners.local.model import native_bfloat16
    from planner_runtime.planners.local.model_store import load_causal_lm
    from planner_runtime.planners.local.threads import use_threads
    from planner_runtime.runs.collect import Progress
    from planner_runtime.tasks.spec import builtin_suite
    from planner_runtime.training import grpo, releases, rl
    from planner_runtime.training.care import Algo, Outcome
    from planner_runtime.training.rollout import EpisodeSequence, RolloutResult

    use_threads(torch, args.threads)
    home = Path(tempfile.mkdtemp(prefix="bench-rl-"))
    manifest = releases.load_manifest(home, releases.BUILTIN_DEFAULT)
    base = releases.verify(home, manifest)
    tokenizer = AutoTokenizer.from_pretrained(base)
    dtype = torch.bfloat16 if native_bfloat16(torch) else torch.float32
    tasks = {t.id: t for t in builtin_suite().tasks}
    options = rl.RlOptions(algo=Algo.care, group=4, steps=1, tasks_per_step=2, threads=args.threads)
    instances = rl.schedule([tasks["clock.set_alarm"], tasks["food.order_dish"]], options)
    rng = random.Random(0)
    groups = []
    for i in range(2):
        prompt = tuple(rng.randrange(100, 40000) for _ in range(args.prompt + 100 * i))
        members = []
        for j in range(4):
            completion = tuple(rng.randrange(100, 40000) for _ in range(args.completion))
            mask = tuple([1] * 20 + [0] * (args.completion - 20))
            members.append(EpisodeSequence(prompt, completion, mask, (0.0,) * args.completion,
                                           Outcome(success=j % 2 == 0, progress=0.5, steps=2, output_tokens=60), f"t{j}"))
        groups.append(members)

    def timed(mode: str) -> float:
        model = PeftModel.from_pretrained(load_causal_lm(base, dtype=dtype),
                                          releases.release_path(home, releases.BUILTIN_DEFAULT), is_trainable=True)
        work = Path(tempfile.mkdtemp(prefix="bench-rl-run-"))
        run = rl._Run(options, options.care, None, {t.id: t for t in instances}, work,
                      lambda _instances, _step: RolloutResult(groups, Progress(), "c", 0.0))
        trainer = grpo.grpo_trainer(model, tokenizer, [t.id for t in instances], options, work / "w",
                                    {"use_cpu": True, "bf16": False}, None, run, rl._rollout_func(run), False, [],
                                    micro_batch=options.group * options.tasks_per_step if mode == "shared" else 1)
        if mode == "fused":  # TRL's own pass, bound back onto this instance
            from trl import GRPOTrainer

            trainer._get_per_token_logps_and_entropies = GRPOTrainer._get_per_token_logps_and_entropies.__get__(trainer)
        started = time.perf_counter()
        trainer.train()
        return time.perf_counter() - started

    import resource

    tokens = sum(len(m.prompt_ids) + len(m.completion_ids) for g in groups for m in g)
    print(f"one GRPO step, 8 sequences, {tokens} tokens, {args.threads} threads, {dtype}:")
    seconds = {}
    for mode in [args.only] if args.only else ["shared", "per-episode", "fused"]:
        seconds[mode] = timed(mode)
        print(f"  {mode:12s} {seconds[mode]:6.1f} s", flush=True)
    if len(seconds) > 1:
        print(f"  per-episode / shared: {seconds['per-episode'] / seconds['shared']:.2f}x; "
              f"fused / shared: {seconds['fused'] / seconds['shared']:.2f}x")
    print(f"  peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
