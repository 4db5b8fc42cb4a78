"""CARE against vanilla GRPO: the same SFT release, task instances, seeds and number of updates.

Trains one release per algorithm with ``planner-agent train rl`` (rollouts on virtual phones),
then benches the starting release and both trained ones side by side on held-out tasks (the
test split's templates, which no run trains on) with ``planner-agent bench``, greedy, one
episode a task: by default the first instance of each test template (``--held-out first``, the
set the README's held-out figures use), or every instance (``--held-out all``, about three times
the bench time). Writes ``benchmarks/results/care_vs_grpo.json``: per algorithm its held-out
``success`` (0..1) and ``output_tokens_per_episode`` (mean and per category), the training
curves' ends from each run's ``steps.jsonl``, the commands, seeds, hardware and wall time.
With ``--fresh-seed N`` (default 1000) the same three also run, side by side, on the trained
templates that have random parameters at instance seed N: tasks of the training distribution
that no rollout saw (training draws seeds 0, 1, ..., one a pass over the templates), where a
planner that solves them can show what each algorithm did to its cost.

Everything resumes: a finished release is not trained again, a stopped run continues from its
last checkpoint (``--resume``), a stopped bench of the same planners and tasks runs only its
unfinished episodes (``bench --resume``), and the results file is written only at the end.

    python benchmarks/bench_care_vs_grpo.py --work /tmp/care-vs-grpo --steps 8 --group 4 --tasks-per-step 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALGOS = ("care", "grpo")


def _cli(args: list[str], env: dict[str, str], log: Path) -> str:
    command = [sys.executable, "-m", "planner_runtime.cli.main", *args]
    print("$ planner-agent " + shlex.join(args), flush=True)
    with log.open("a", encoding="utf-8") as err:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    if done.returncode != 0:
        raise SystemExit(f"planner-agent {args[0]} {args[1] if len(args) > 1 else ''} failed ({done.returncode}); see {log}")
    return done.stdout


def _steps(path: Path) -> list[dict]:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue
    return lines


def _curve(lines: list[dict]) -> dict:
    """The training log's first and last quarter: success rate and output tokens per episode."""
    def mean(rows: list[dict], key: str) -> float | None:
        values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        return sum(values) / len(values) if values else None

    q = max(1, len(lines) // 4)
    return {"steps": len(lines), "first_quarter": {"success_rate": mean(lines[:q], "success_rate"),
                                                   "output_tokens_per_episode": mean(lines[:q], "output_tokens_per_episode")},
            "last_quarter": {"success_rate": mean(lines[-q:], "success_rate"),
                             "output_tokens_per_episode": mean(lines[-q:], "output_tokens_per_episode")},
            "rollout_seconds": sum(r.get("rollout_seconds") or 0 for r in lines),
            "update_seconds": sum(r.get("update_seconds") or 0 for r in lines),
            "regimes": {k: sum((r.get("regimes") or {}).get(k, 0) for r in lines) for k in ("progress", "correctness", "cost")}}


def _stopped_bench(store: Path, models: list[str], want: dict) -> str | None:
    """The latest bench in ``store`` with these planners (in order) whose specs hold ``want``
    (the task selection and step limit: ``split``, ``per_template``, ``tasks``, ``first_seed``,
    ``max_steps``), to resume; a finished one resumes too, with nothing left to run.
    Read with sqlite3 directly: the store has no query for benches, only for their collections
    (``BENCH.0``, ``BENCH.1``, ... each holding the spec it was started with)."""
    if not store.is_file():
        return None
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        specs = {cid: json.loads(spec) for cid, spec in conn.execute("SELECT id, spec FROM collections WHERE id LIKE 'bench%' ORDER BY rowid")}
    for bench in reversed(list(dict.fromkeys(c.rsplit(".", 1)[0] for c in specs))):
        found = [specs.get(f"{bench}.{i}") for i in range(len(models) + 1)]
        if found[-1] is None and all(s is not None and s.get("model") == m and all(s.get(k) == v for k, v in want.items())
                                     for s, m in zip(found, models)):
            return bench
    return None


def _bench(tasks: list[str], want: dict, models: list[str], rest: list[str], args: argparse.Namespace,
           env: dict[str, str], log: Path, commands: list[str]) -> dict:
    """``planner-agent bench`` of ``models`` over ``tasks`` (options), resumed where a bench of the
    same planners and tasks stopped; its report."""
    commands.append("planner-agent " + shlex.join(["bench", *tasks, *rest]))
    stopped = _stopped_bench(args.work / "eval.sqlite", models, want)
    if stopped is not None:
        resume = ["bench", "--resume", stopped, "--store", str(args.work / "eval.sqlite"), "-n", str(args.devices), "--json"]
        commands.append("planner-agent " + shlex.join(resume))
        return json.loads(_cli(resume, env, log))
    return json.loads(_cli(["bench", *tasks, *rest], env, log))


def _random_templates(chosen: list[str] | None) -> list[str]:
    """The templates among ``chosen`` (default: the train split's) with random parameters, in order:
    those a new instance seed makes new tasks of."""
    from planner_runtime.tasks.spec import builtin_suite

    tasks = builtin_suite().tasks
    random = {t.id for t in tasks if t.random}
    names = chosen if chosen else list(dict.fromkeys(t.template for t in tasks if t.split_name == "train"))
    return [n for n in names if n in random]


def _hardware() -> dict:
    import torch

    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu or platform.processor(), "cores": len(os.sched_getaffinity(0)), "threads": torch.get_num_threads(),
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "python": platform.python_version(), "torch": torch.__version__}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="Home of the runs (releases, logs, stores); reuse it to resume.")
    ap.add_argument("--from", dest="source", default="embedded-sft", help="The SFT release both start from.")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--tasks-per-step", type=int, default=2)
    ap.add_argument("--task", action="append", default=None, help="Train on these templates (default: the train split).")
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--episode-steps", type=int, default=6)
    ap.add_argument("--policy", type=Path, default=None, help="Safety policy for rollouts and bench (default: deny).")
    ap.add_argument("--allow-sensitive", action="store_true",
                    help="Rollouts and bench may take every sensitive action (virtual phones only): a policy file in --work.")
    ap.add_argument("--held-out", choices=("first", "all"), default="first",
                    help="Bench the first instance of each test template (default) or every test-split task.")
    ap.add_argument("--fresh-seed", type=int, default=1000,
                    help="Also bench the trained templates with random parameters at this instance seed (training draws "
                         "seeds 0, 1, ..., one a pass over the templates); negative: skip.")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "care_vs_grpo.json")
    args = ap.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    if args.allow_sensitive and args.policy is None:
        from planner_runtime.harness.safety import Sensitivity

        args.policy = args.work / "allow.yaml"
        args.policy.write_text("allow: [" + ", ".join(s.value for s in Sensitivity) + "]\n", encoding="utf-8")
    env = {**os.environ, "PLANNER_AGENT_HOME": str(args.work / "home"), "PLANNER_AGENT_THREADS": str(args.threads)}
    log = args.work / "stderr.log"
    started = time.monotonic()
    commands = []
    names = {}
    for algo in ALGOS:
        name = names[algo] = f"{args.source}-{algo}-s{args.steps}g{args.group}"
        if (args.work / "home" / "releases" / name / "manifest.json").is_file():
            continue
        cmd = ["train", "rl", "--algo", algo, "--from", args.source, "--out", name, "--steps", str(args.steps),
               "--group", str(args.group), "--tasks-per-step", str(args.tasks_per_step), "--lr", str(args.lr),
               "--seed", str(args.seed), "-n", str(args.devices), "--threads", str(args.threads),
               "--episode-steps", str(args.episode_steps), "--save-steps", "1"]
        cmd += [w for t in args.task or [] for w in ("--task", t)]
        cmd += ["--policy", str(args.policy)] if args.policy else []
        run_dir = args.work / "home" / "training" / name
        if run_dir.is_dir() and any(run_dir.iterdir()):
            cmd.append("--resume")
        commands.append("planner-agent " + shlex.join(cmd))
        _cli(cmd, env, log)
    models = [f"release:{r}" for r in (args.source, *names.values())]
    rest = ["-k", "1", "--max-steps", str(args.episode_steps), "-n", str(args.devices),
            "--store", str(args.work / "eval.sqlite"), "--json", "--planner", "local", "--release", args.source]
    for algo in ALGOS:
        rest += ["--planner", "local", "--release", names[algo]]
    rest += ["--policy", str(args.policy)] if args.policy else []
    per_template = None if args.held_out == "all" else 1
    chosen = ["--split", "test", *([] if per_template is None else ["--per-template", "1"])]
    report = _bench(chosen, {"split": "test", "per_template": per_template, "max_steps": args.episode_steps}, models, rest,
                    args, env, log, commands)
    fresh_report, fresh_templates = None, _random_templates(args.task) if args.fresh_seed >= 0 else []
    if fresh_templates:
        fresh = [w for t in fresh_templates for w in ("--task", t)] + ["--first-seed", str(args.fresh_seed)]
        # a spec records its tasks sorted, without repeats
        fresh_report = _bench(fresh, {"tasks": sorted(set(fresh_templates)), "first_seed": args.fresh_seed, "split": None,
                                      "max_steps": args.episode_steps}, models, rest, args, env, log, commands)
    planners = list(report["planners"].values())
    held_out = {label: p["categories"] for label, p in zip(["sft", *ALGOS], planners)}

    def summary(categories: dict) -> dict:
        overall = categories["overall"]
        return {"success": overall["rate"], "successes": overall["successes"], "n": overall["n"],
                "output_tokens_per_episode": overall["output_tokens"], "steps_per_episode": overall["steps"],
                "per_category": {k: {"success": v["rate"], "n": v["n"], "output_tokens_per_episode": v["output_tokens"]}
                                 for k, v in categories.items() if k != "overall"}}

    result = {
        "experiment": "CARE vs vanilla GRPO from the same SFT release",
        "source_release": args.source,
        "held_out": ("every test-split task" if args.held_out == "all" else "the first task of each test-split template")
                    + " (templates never trained on), greedy, 1 episode each, bench " + report["bench"],
        "sft": summary(held_out["sft"]),
        **({"fresh_seeds": {"tasks": f"the {len(fresh_templates)} trained templates with random parameters at instance seed "
                                     f"{args.fresh_seed} (never drawn in training), greedy, 1 episode each, bench {fresh_report['bench']}",
                            **{label: summary(p["categories"]) for label, p in zip(["sft", *ALGOS], fresh_report["planners"].values())}}}
           if fresh_report else {}),
        **{algo: {**summary(held_out[algo]), "release": names[algo],
                  "train": _curve(_steps(args.work / "home" / "training" / names[algo] / "steps.jsonl"))}
           for algo in ALGOS},
        "settings": {"held_out": args.held_out, "steps": args.steps, "group": args.group, "tasks_per_step": args.tasks_per_step, "lr": args.lr,
                     "episode_steps": args.episode_steps, "tasks": args.task or "train split"},
        "seeds": {"trainer_and_task_order": args.seed, "first_instance_seed": 0, "bench_first_seed": 0,
                  "fresh_seed": args.fresh_seed if fresh_report else None},
        "commands": commands,
        "script": "python benchmarks/bench_care_vs_grpo.py " + shlex.join(sys.argv[1:]),
        "hardware": _hardware(),
        # this invocation only: a resumed run skips what earlier ones did (each release's own training
        # time is its train.rollout_seconds and train.update_seconds)
        "invocation_wall_s": round(time.monotonic() - started, 1),
    }
    care, grpo = result["care"], result["grpo"]
    if grpo["output_tokens_per_episode"]:
        result["care_output_tokens_vs_grpo"] = care["output_tokens_per_episode"] / grpo["output_tokens_per_episode"] - 1
    result["care_success_minus_grpo_points"] = 100 * (care["success"] - grpo["success"])
    fresh = result.get("fresh_seeds")
    if fresh and fresh["grpo"]["output_tokens_per_episode"]:
        fresh["care_output_tokens_vs_grpo"] = fresh["care"]["output_tokens_per_episode"] / fresh["grpo"]["output_tokens_per_episode"] - 1
        fresh["care_success_minus_grpo_points"] = 100 * (fresh["care"]["success"] - fresh["grpo"]["success"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # the file is committed: the work folder and the file itself are named $WORK and $OUT, not where
    # this machine put them
    text = json.dumps(result, indent=2)
    for path, name in ((args.out, "$OUT"), (args.work, "$WORK")):
        text = text.replace(str(path.resolve()), name).replace(str(path), name)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("care_output_tokens_vs_grpo", "care_success_minus_grpo_points") if k in result}))
    for where, rows in (("held-out", result), ("fresh-seed", result.get("fresh_seeds"))):
        for label in ("sft", *ALGOS) if rows else ():
            r = rows[label]
            print(f"{label:5s} {where} success {r['successes']}/{r['n']} = {r['success']:.2f}, "
                  f"{r['output_tokens_per_episode']:.1f} output tokens/episode, {r['steps_per_episode']:.2f} steps")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
