"""SFT speed on this machine: tokens a second against the machine's FLOP floor, side by side.

Plays the demos of a few built-in tasks on the virtual phone, builds the SFT sequences the way
``planner-agent train sft`` does (one per trajectory, loss on the accepted assistant turns), and
times real optimizer steps of TRL's ``SFTTrainer`` on the embedded model, alternating the
configurations in one run:

- LoRA, frozen base in bfloat16 (what ``train sft`` picks on a CPU with native bfloat16; float32
  on one without, and then every configuration below is float32), compact tools;
- the same with TRL's own loss (its fused LM head over every position) instead of ``train sft``'s,
  which runs the head only where a token trains;
- LoRA, frozen base in float32, compact tools;
- LoRA, bfloat16 base, the json tool list (Qwen's rendering: about 3.5x the tokens).

The floor is the machine's own GEMM rate (a square matmul in the same dtype, same threads): a
LoRA step costs about 4 FLOPs per weight per token (forward, and the backward to the inputs; the
frozen weights take no gradient), so ``tokens/s x 4 x params / GEMM FLOP/s`` is the fraction of
the floor reached (a frozen system turn needs only its forward pass, 2 FLOPs a weight, so that
configuration can pass 100% of this floor).

``--activation-tokens N`` adds the last configuration again with that bound on kept activations
(``train sft --activation-tokens``: just enough layers recompute theirs), for its cost in time and
what it saves in peak RSS; ``--longest`` takes the train templates whose demos make the longest
sequences (up to 4,096 tokens, 2,500 of them after the system turn) and only the frozen system turn.

Each configuration runs as ``train sft`` does, with glibc's mmap threshold held at 1 MiB (freed
activations go back to the system: :mod:`planner_runtime.planners.local.heap`). ``--heap`` instead
times the first configuration three ways, side by side: that threshold, the threshold with torch's
huge-page allocations (``THP_MEM_ALLOC_ENABLE=1``), and glibc's own default, with the page faults
of a step and the peak RSS of each: what returning the memory costs in time (torch's huge pages
only in the ``thp`` run, whatever this shell's environment says).

    python benchmarks/bench_train.py [--tasks 12] [--steps 4] [--threads N] [--quick | --longest | --heap] [--activation-tokens N]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import tempfile
import time
from pathlib import Path


def gemm_flops(torch, dtype, n: int = 2048, repeat: int = 5) -> float:  # noqa: ANN001
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - started)
    return 2 * n**3 / statistics.median(times)


def trajectories(store_path: Path, tasks: int, longest: bool = False, tokenizer=None):  # noqa: ANN001, ANN201
    """The demo trajectories of the first ``tasks`` train tasks; with ``longest``, of the
    ``tasks`` train templates whose demo makes the longest sequence (one task a template)."""
    from device_farm.pool.pool import DevicePool
    from device_farm.virtual.source import VirtualSource
    from planner_runtime.planners.demo import DemoPlanner
    from planner_runtime.runs.collect import collect
    from planner_runtime.runs.demos import DEMO_POLICY
    from planner_runtime.tasks.spec import builtin_suite
    from planner_runtime.trajectories.store import TrajectoryStore
    from planner_runtime.training import data

    train = [t for t in builtin_suite().tasks if t.split_name == "train" and t.demo]
    if longest:
        firsts: dict[str, object] = {}
        for t in train:
            firsts.setdefault(t.template, t)
        chosen = list(firsts.values())
    else:
        chosen = train[:tasks]
    store = TrajectoryStore(store_path, create=True).open()
    with DevicePool([VirtualSource(2)], state_dir=store_path.parent / "pool") as pool:
        collect(chosen, pool=pool, store=store, planner_for=lambda t: DemoPlanner(t.rendered_demo()), workers=2,
                policy=DEMO_POLICY)  # a demo may pay and buy on the sandbox phone, as `collect --planner demo` lets it
    played = data.select(store, data.Selection(split="all"))
    if longest:
        lengths = [len(s.input_ids) for s in data.build(played, tokenizer, rendering="compact").sequences]
        played = [t for _, t in sorted(zip(lengths, played), key=lambda pair: -pair[0])[:tasks]]
    return store, played


HEAPS = {"threshold": "mmap threshold at 1 MiB (train sft)", "thp": "threshold, torch huge pages", "default": "glibc default"}


def time_steps(rows, dtype, steps: int, work: Path, kept_logits: bool = True, frozen_system: bool = False,  # noqa: ANN001
               threads: int = 2, activation_tokens: int | None = None, heap: str = "threshold") -> tuple[float, int, float, float]:
    """Seconds per optimizer step (median after one warm-up), tokens per step, the peak RSS (MiB)
    of the process and its page faults a step (median); call it in a process of its own
    (:func:`isolated`), with ``THP_MEM_ALLOC_ENABLE`` in its environment for the ``thp`` heap."""
    from planner_runtime.planners.local.heap import return_large_blocks

    if heap != "default":
        return_large_blocks()
    import torch

    torch.set_num_threads(threads)
    from transformers import AutoTokenizer, TrainerCallback

    from planner_runtime.planners.local.model_store import ensure_embedded_model, load_causal_lm
    from planner_runtime.training import sft

    class Clock(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[float] = []
            self.faults: list[int] = []

        def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
            self.marks.append(time.perf_counter())
            self.faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)

    base = ensure_embedded_model()
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = load_causal_lm(base, dtype=dtype)
    options = sft.SftOptions(max_steps=steps + 1, lora_rank=8, lora_alpha=16, save_steps=10_000, frozen_system=frozen_system,
                               activation_tokens=activation_tokens)
    clock = Clock()
    trainer = sft._trainer(model, tokenizer, rows, options, work, {"use_cpu": True, "bf16": False}, False, [clock],
                           kept_logits=kept_logits)
    started = time.perf_counter()
    trainer.train()
    marks = [started, *clock.marks]
    per_step = statistics.median(b - a for a, b in zip(marks[1:], marks[2:]))
    faults = statistics.median(b - a for a, b in zip(clock.faults, clock.faults[1:]))
    tokens = statistics.mean(len(s.input_ids) for s in rows.sequences[: steps + 1])
    del torch
    return per_step, int(tokens), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, faults


def _set_environ(env: dict[str, str | None]) -> None:
    """Set (a value) or unset (None) these variables in this process."""
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def isolated(fn, *args, env: dict[str, str | None] | None = None, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
    """``fn(*args, **kwargs)`` in a fresh process, its environment changed by ``env`` before
    ``fn`` imports anything: its memory peak is its own."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_set_environ, initargs=(env or {},)) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="only the default and the frozen system turn, side by side")
    parser.add_argument("--heap", action="store_true",
                        help="only the first configuration, with the mmap threshold, with torch huge pages too, and with glibc's default")
    parser.add_argument("--longest", action="store_true",
                        help="the demos of the --tasks train templates with the longest sequences, and only the frozen system turn")
    parser.add_argument("--activation-tokens", type=int, default=None,
                        help="also the last configuration with this bound on kept activations, side by side")
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer

    from planner_runtime.planners.local.model import native_bfloat16
    from planner_runtime.planners.local.model_store import ensure_embedded_model
    from planner_runtime.planners.local.threads import intra_op_threads, use_threads
    from planner_runtime.training import data

    threads = use_threads(torch, args.threads or intra_op_threads())
    tokenizer = AutoTokenizer.from_pretrained(ensure_embedded_model())
    with tempfile.TemporaryDirectory() as tmp:
        store, chosen = trajectories(Path(tmp) / "demos.sqlite", args.tasks, args.longest, tokenizer)
        params = 134_515_008  # SmolLM2-135M, embeddings tied
        print(f"{threads} threads; {len(chosen)} demo trajectories; {params / 1e6:.0f}M parameters")
        # the dtype `train sft` picks for a LoRA's frozen base: bfloat16 where the CPU computes it
        # natively, else float32 (emulated bfloat16 GEMMs are tens of times slower: not worth timing)
        native = native_bfloat16(torch)
        base, base_name = (torch.bfloat16, "bf16") if native else (torch.float32, "fp32")
        bound = args.activation_tokens
        configs = [(f"LoRA, {base_name} base, compact tools", base, "compact", True, False, None),
                   (f"LoRA, {base_name} base, compact tools, frozen system turn", base, "compact", True, True, None),
                   (f"LoRA, {base_name} base, compact tools, TRL's loss", base, "compact", False, False, None),
                   ("LoRA, fp32 base, compact tools", torch.float32, "compact", True, False, None),
                   (f"LoRA, {base_name} base, json tools", base, "json", True, False, None)]
        if not native:
            del configs[3]  # the same as the first
        if args.quick:
            configs = configs[:2]
        if args.longest:
            configs = [configs[1]]
        if bound:
            configs.append((f"{configs[-1][0]}, --activation-tokens {bound}", *configs[-1][1:5], bound))
        runs = [(*c, "threshold") for c in configs]
        if args.heap:
            runs = [(f"{configs[0][0]}, {HEAPS[h]}", *configs[0][1:], h) for h in HEAPS]
        floors = {d: gemm_flops(torch, d) for d in {c[1] for c in configs}}
        for d, f in floors.items():
            print(f"GEMM floor {str(d).removeprefix('torch.')}: {f / 1e9:.0f} GFLOP/s")
        for label, dtype, rendering, kept, frozen, activation_tokens, heap in runs:
            rows = data.build(chosen, tokenizer, rendering=rendering)
            work = Path(tmp) / re.sub(r"\W+", "_", label)
            per_step, tokens, rss, faults = isolated(
                time_steps, rows, dtype, args.steps, work, kept_logits=kept, frozen_system=frozen, threads=threads,
                activation_tokens=activation_tokens, heap=heap, env={"THP_MEM_ALLOC_ENABLE": "1" if heap == "thp" else None})
            rate = tokens / per_step
            print(f"{label}: {per_step:.2f} s/step, {tokens} tokens/step, {rate:.0f} tokens/s, "
                  f"{rate * 4 * params / floors[dtype]:.0%} of the {str(dtype).removeprefix('torch.')} GEMM floor, "
                  f"peak RSS {rss:.0f} MiB, {faults / 1000:.0f}k page faults/step", flush=True)
        store.close()


if __name__ == "__main__":
    main()
