"""Throughput of `planner-agent serve` with the embedded planner: 8 clients at once vs one by one.

Starts the server in this process on 127.0.0.1 with the local model and sends the same N
episode-like requests (the harness's system prompt and tools, a screen, N different goals; up to
``--tokens`` new tokens each, constrained) through the ``openai`` planner: first sequentially from
one client, then from N concurrent clients. Prints both wall times, requests per second, their
ratio, the batch sizes the engine ran, and the process RSS (the embedded planner and its caches).
A warm-up request first, so both runs start with the shared prefix cached.

``--tools all`` (the default) offers every tool of the default toolset, the longest prompt
(~5.8k tokens); ``--tools goal`` offers what a real episode would get for each goal
(:func:`~planner_runtime.harness.toolbox.for_goal`: the general tools and the apps the goal bears
on), so prompts are shorter and differ between goals after the tools they share.

``--stagger-ms`` starts the concurrent clients that far apart, as a farm's workers do: each joins
the running batch at the next step.

    python benchmarks/bench_serving.py [--clients 8] [--tokens 40] [--tools all|goal] [--stagger-ms 0]
"""

from __future__ import annotations

import argparse
import threading
import time

from planner_runtime.contract import Message, Role
from planner_runtime.harness.episode import SYSTEM_PROMPT
from planner_runtime.harness.toolbox import default_toolset, for_goal
from planner_runtime.planners import Sampling
from planner_runtime.planners.local.planner import LocalPlanner
from planner_runtime.planners.openai.client import OpenAIPlanner
from planner_runtime.serving.server import PlannerServer

GOALS = [
    "Set an alarm for 7:30", "Set an alarm for 6:15", "Open the Clock app", "Add a contact named Ann",
    "Turn off the 8:00 alarm", "Set an alarm for 22:45", "Open Contacts", "Set an alarm for 5:05",
    "Add a contact named Bo Li", "Set an alarm for 9:00", "Open Settings", "Set an alarm for 11:11",
]
WARM_UP = "Set an alarm for 7:00"
SCREEN = "\n".join(f"[{i}] TextView '{label}'" for i, label in enumerate(
    ["Home", "Clock", "Contacts", "Messages", "Phone", "Settings", "Camera", "Calendar", "12:00", "Wed, Jan 1"]))


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def chat(goal: str) -> list[Message]:
    return [Message(role=Role.system, content=SYSTEM_PROMPT), Message(role=Role.user, content=f"Current screen:\n{SCREEN}\n\nGoal: {goal}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--tools", choices=("all", "goal"), default="all")
    parser.add_argument("--stagger-ms", type=float, default=0.0,
                        help="start the concurrent clients this far apart (0: all at once); later ones join the running batch")
    parser.add_argument("--dtype", choices=("auto", "float32", "bfloat16"), default="auto",
                        help="auto: what serve uses (bfloat16 where the CPU has it natively)")
    args = parser.parse_args()
    goals = (GOALS * 4)[: args.clients]
    every = default_toolset()

    # chosen before the clock starts, as an episode chooses its tools once at its start (the
    # first choice on a fresh thread also builds that thread's stemmer, which delayed the first
    # concurrent requests past the engine's gathering window)
    chosen = {g: every.specs() if args.tools == "all" else for_goal(every, g).specs() for g in {*goals, WARM_UP}}
    sampling = Sampling(max_new_tokens=args.tokens)

    planner = LocalPlanner(dtype=None if args.dtype == "auto" else args.dtype)  # auto is the CLI's default: bfloat16 where the CPU has it, 512-token prefill chunks
    with PlannerServer(planner, model_name="smol", max_batch=args.clients) as server:
        print(f"model loaded; RSS {rss_mb():.0f} MB")
        client = OpenAIPlanner(server.base_url, "smol", timeout=600)
        warm = client.plan(chat(WARM_UP), chosen[WARM_UP], sampling=sampling)
        print(f"prompt {warm.usage.prompt_tokens} tokens; warm-up answer: {warm.text[-60:]!r}")

        server.engine.batches.clear()
        started = time.perf_counter()
        seq = [client.plan(chat(g), chosen[g], sampling=sampling) for g in goals]
        sequential_s = time.perf_counter() - started

        server.engine.batches.clear()
        server.engine.widest = 0
        outs: list = [None] * len(goals)

        # each client made before the clock starts, as a harness worker keeps its own: making
        # eight at once inside the timed run delayed the first requests by more than the
        # engine's gathering window, which then ran them as batches of 1 and 7
        clients = [OpenAIPlanner(server.base_url, "smol", timeout=600) for _ in goals]
        ready = threading.Barrier(len(goals) + 1)

        def one(i: int) -> None:
            ready.wait()
            time.sleep(i * args.stagger_ms / 1000)
            outs[i] = clients[i].plan(chat(goals[i]), chosen[goals[i]], sampling=sampling)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(goals))]
        for t in threads:
            t.start()
        ready.wait()
        started = time.perf_counter()
        for t in threads:
            t.join()
        concurrent_s = time.perf_counter() - started
        for c in clients:
            c.close()
        batches, widest = list(server.engine.batches), server.engine.widest

    same = sum(a.text == b.text for a, b in zip(seq, outs))
    tokens = sum(o.usage.completion_tokens for o in outs)
    print(f"sequential, 1 client : {sequential_s:6.2f} s  {len(goals) / sequential_s:5.2f} req/s")
    print(f"concurrent, {len(goals)} clients: {concurrent_s:6.2f} s  {len(goals) / concurrent_s:5.2f} req/s  requests per busy spell {batches}, at most {widest} rows a step")
    print(f"throughput ratio (concurrent / sequential): {sequential_s / concurrent_s:.2f}x   (target >= 3x)")
    print(f"answers identical in both runs: {same}/{len(goals)}; {tokens} output tokens in the concurrent run")
    peak = peak_rss_mb()
    print(f"process RSS now {rss_mb():.0f} MB, peak {peak:.0f} MB: {peak / 1024:.2f}x the 1024 MB target (<= 1.00 meets it)")


if __name__ == "__main__":
    main()
