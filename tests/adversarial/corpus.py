"""The adversarial corpus: load corpus.json, evaluate entries through the evaluator, judge them against the
expected verdicts, print the expected-vs-actual table.

Used by tests/evaluator/test_adversarial_cpu.py, tests/evaluator/test_adversarial_gpu.py and, as a script,
by scripts/gpu_tests.sh:

    python tests/adversarial/corpus.py [--gpu-only|--cpu-only] [--repeat 2] [--json OUT] [--gpus all|A,B,...]

An entry whose needs are unmet here ("needs" in corpus.json, and a CUDA GPU for "gpu": true entries) is recorded
as "not run", which is not ok: the script exits 1 when an entry failed, else 4 when one was not run, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from evaluator.both_sides.taskdata import find_task  # noqa: E402
from evaluator.both_sides.verdict import OverallStatus, Verdict  # noqa: E402
from evaluator.errors import EnvironmentProblem  # noqa: E402
from evaluator.isolation.jail import Cgroup, Limits, open_jail  # noqa: E402
from evaluator.pipeline import Options, evaluate  # noqa: E402

MANIFEST = HERE / "corpus.json"

# Planted secrets for entries with "secrets": true. The runner puts CANARY in its own environment under names a
# portal secret could have and fixes the run seed to SEED_HEX; `expect.stdout_lacks` may name them as {canary}
# and {seed_hex}. Whatever the candidate finds in its environment, arguments, files or memory and prints, these
# values must not be among it.
CANARY = "ptxbench-canary-3f9c2a7e51d04b68"
CANARY_ENV = ("PTXBENCH_CANARY_SECRET", "SECRET_KEY", "DJANGO_SECRET_KEY", "PTXBENCH_SECRET_SEED", "RANKED_SEED")
SEED_HEX = "c4a9f1e07b3d52866d0e9a1f4b7c2d35"
NO_INTEGRITY = "verdict has no integrity record"
ENVIRONMENT_ATTEMPTS = 2  # evaluations of an entry whose evaluation raised EnvironmentProblem (the host's failure)


@dataclass
class Outcome:
    """One entry's evaluation, judged."""

    name: str
    expected: str
    actual: str
    ok: bool
    detail: str = ""
    seconds: float = 0.0
    clean_after: str = ""  # "PASSED" or what the legitimate kernel got next ("" when not asked)
    skipped: str = ""  # why it was not run (its needs are unmet here); such an outcome is never ok
    gpu: str = ""  # the CUDA_VISIBLE_DEVICES it ran under ("" when unset): which GPU of a host ran it
    verdict: dict[str, Any] = field(default_factory=dict)


def load() -> dict[str, Any]:
    return json.loads(MANIFEST.read_text())


def entries(*, gpu: bool | None = None) -> list[dict[str, Any]]:
    """Manifest entries; gpu=True/False keeps only GPU / CPU ones."""
    return [e for e in load()["entries"] if gpu is None or bool(e["gpu"]) == gpu]


def capabilities(*, gpu: bool = False) -> dict[str, str | None]:
    """For each need ('sandbox', 'pids_limit', and 'gpu' when asked): None when met here, else why not."""
    caps: dict[str, str | None] = {"gpu": gpu_problem()} if gpu else {}
    try:
        jail = open_jail(allow_unsandboxed=False)
    except EnvironmentProblem as exc:
        return {**caps, "sandbox": str(exc), "pids_limit": "no sandbox"}
    cgroup, why = Cgroup.create(Limits())
    if cgroup is not None:
        cgroup.remove()
    del jail
    return {**caps, "sandbox": None, "pids_limit": None if cgroup is not None else why}


def gpu_problem() -> str | None:
    """None when a CUDA GPU is visible to PyTorch here, else why the GPU entries cannot run."""
    try:
        import torch
    except ImportError:
        return "torch is not importable"
    return None if torch.cuda.is_available() else "no CUDA GPU visible"


def unmet(entry: dict[str, Any], caps: dict[str, str | None]) -> str:
    """Why `entry` cannot run here ("" when it can). A GPU entry needs "gpu" where `caps` says (capabilities(gpu=True))."""
    needs = [*entry.get("needs", []), *(["gpu"] if entry.get("gpu") else [])]
    reasons = [f"{need}: {caps.get(need)}" for need in needs if caps.get(need)]
    return "; ".join(reasons)


def evaluate_entry(entry: dict[str, Any], *, source_path: Path | None = None, stages: str | None = None) -> Verdict:
    """Evaluate one entry's kernel (or `source_path`) with its task, workload, stages and options.

    An entry with "secrets": true is evaluated with the canary in this process's environment and the run seed
    fixed to SEED_HEX (both restored afterwards).
    """
    target = load()["tasks"][entry["on"]]
    task = find_task(REPO / target["root"], target["task"])
    path = source_path or (HERE / entry["file"]).resolve()
    opts = {"timeout_s": 60.0, "compile_timeout_s": 120.0, **entry.get("options", {})}
    planted = bool(entry.get("secrets")) and source_path is None
    if planted:
        opts["seed"] = bytes.fromhex(SEED_HEX)
    options = Options(device_type=target["device"], **opts)
    stage_list = (stages or entry["stages"]).split(",")
    saved = {name: os.environ.get(name) for name in CANARY_ENV} if planted else {}
    try:
        for name in saved:
            os.environ[name] = CANARY
        return evaluate(
            path.read_text(),
            task,
            target["arch"],
            workloads=target["workload"],
            stages=stage_list,
            options=options,
            language=entry.get("language", "cuda"),
        )
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def judge(entry: dict[str, Any], verdict: Verdict | dict[str, Any]) -> tuple[bool, str]:
    """Whether the verdict is the expected one, and what was found (for the table).

    `verdict` is a Verdict or its dict form (evaluator.both_sides.verdict.to_dict). Expectation fields: see corpus.json's
    comment. `reason` is checked only when the status is not PASSED and `min_latency_ms` only when it is, so an
    entry may accept "caught" or "neutralised" (timed at its honest speed).
    """
    v = verdict if isinstance(verdict, dict) else _as_dict(verdict)
    expect = entry["expect"]
    status = str(v.get("status"))
    workloads = v.get("workloads") or []
    arch = (v.get("arch_check") or {}).get("status")
    problems = []
    if status not in expect["status"]:
        problems.append(f"status {status}, expected one of {'/'.join(expect['status'])}")
    reason = _reason(v)
    if expect.get("reason") and status != "PASSED" and not any(r in reason for r in expect["reason"]):
        wanted = " or ".join(repr(r) for r in expect["reason"])
        problems.append(f"the message lacks {wanted} (status {status}): {reason[:300]!r}")
    if expect.get("arch") and arch != expect["arch"]:
        problems.append(f"arch {arch}")
    if expect.get("arch_not") and arch in expect["arch_not"]:
        problems.append(f"arch {arch} (must not be {'/'.join(expect['arch_not'])})")
    if expect.get("min_latency_ms") is not None and status == "PASSED":
        perf = (workloads[0].get("performance") or {}) if workloads else {}
        latency = perf.get("latency_ms")
        if latency is None or latency < expect["min_latency_ms"]:
            problems.append(f"latency {latency} ms")
    if status == "PASSED" and (expect.get("max_speedup") is not None or expect.get("latency_from")):
        perf = (workloads[0].get("performance") or {}) if workloads else {}
        speedup = perf.get("speedup_factor")
        if expect.get("max_speedup") is not None and (speedup is None or speedup > expect["max_speedup"]):
            problems.append(f"speedup {speedup} (at most {expect['max_speedup']} expected)")
        if expect.get("latency_from") and perf.get("latency_from") not in expect["latency_from"]:
            problems.append(f"latency from {perf.get('latency_from')!r}")
    tails = " ".join(str(w.get("stdout_tail", "")) + " " + str(w.get("stderr_tail", "")) for w in workloads)
    if expect.get("stdout_contains") and expect["stdout_contains"] not in tails:
        problems.append("stdout lacks " + repr(expect["stdout_contains"]))
    for secret in expect.get("stdout_lacks", []):
        value = secret.format(canary=CANARY, seed_hex=SEED_HEX)
        if value in tails:
            problems.append(f"the candidate's output contains {secret!r}")
    if "held" in expect:
        problems.extend(_held_problems(expect["held"], v.get("integrity")))
    if expect.get("held_when_passed") and status == "PASSED":
        problems.extend(_held_problems(expect["held_when_passed"], v.get("integrity")))
    if expect.get("other_tensor") and not (v.get("arch_check") or {}).get("other_tensor_static"):
        problems.append("no second tensor-core path counted in the static SASS (arch_check.other_tensor_static)")
    if expect.get("caught_or_disclosed") and status == "PASSED":
        problems.extend(_caught_or_disclosed(expect["caught_or_disclosed"], v))
    return not problems, "; ".join(problems) or reason[:160]


def _held_problems(wanted: list[str], integrity: Any) -> list[str]:
    """`held` [] means: an integrity record with no holds; otherwise any one of the codes must be held."""
    if not isinstance(integrity, dict):
        return [NO_INTEGRITY]
    codes = [str(h.get("code")) for h in integrity.get("holds") or [] if isinstance(h, dict)]
    if not wanted:
        return [f"held {', '.join(codes)} (an honest kernel must not be held)"] if codes else []
    if not any(code in codes for code in wanted):
        return [f"not held for {'/'.join(wanted)} (holds: {', '.join(codes) or 'none'})"]
    return []


def _caught_or_disclosed(codes: list[str], v: dict[str, Any]) -> list[str]:
    """A profiled-only path: held for one of `codes`, or not verified, or verified with what the timed calls may
    have run instead disclosed: the timed rate within reach of code without tensor cores
    (`arch_check.timed_beyond_non_tensor` false), or a second tensor-core path in the module
    (`arch_check.other_tensor_static`)."""
    if not _held_problems(codes, v.get("integrity")):
        return []
    check = v.get("arch_check") or {}
    if check.get("status") != "verified" or check.get("timed_beyond_non_tensor") is False:
        return []
    if check.get("other_tensor_static"):
        return []
    return [
        f"verified, not held for {'/'.join(codes)}, and not disclosed: the timed rate ({check.get('timed_tflops')} "
        "TFLOP/s) is beyond code without tensor cores, and the module holds no second tensor-core path"
    ]


def _as_dict(verdict: Verdict) -> dict[str, Any]:
    from evaluator.both_sides.verdict import to_dict

    return to_dict(verdict)


def _reason(v: dict[str, Any]) -> str:
    if v.get("status") == OverallStatus.POLICY_REJECTED.value:
        return " | ".join(str(f.get("message", "")) for f in v.get("policy") or [])
    if v.get("status") == OverallStatus.COMPILE_ERROR.value and v.get("compile"):
        return str(v["compile"].get("output", ""))[-2000:]
    failing = [w for w in v.get("workloads") or [] if w.get("status") != "PASSED"]
    if failing:
        return str(failing[0].get("message", ""))
    return str((v.get("arch_check") or {}).get("reason") or "")


def run_entry(entry: dict[str, Any], caps: dict[str, str | None]) -> Outcome:
    expect = entry["expect"]
    expected = "/".join(expect["status"]) + (f" + arch {expect['arch']}" if expect.get("arch") else "")
    if "held" in expect:
        expected += " + held " + ("none" if not expect["held"] else "/".join(expect["held"]))
    skipped = unmet(entry, caps)
    if skipped:  # nothing was shown: not ok, whatever the reason
        return Outcome(entry["name"], expected, "not run", False, f"not run: {skipped}", skipped=skipped)
    start = time.monotonic()
    problems: list[str] = []
    verdict = None
    # This host's failure is not the entry's outcome: as the portal requeues such an evaluation, the entry is
    # evaluated once more, and a second failure is this entry's "not as expected" (the round goes on either way).
    for _ in range(ENVIRONMENT_ATTEMPTS):
        try:
            verdict = evaluate_entry(entry)
            break
        except EnvironmentProblem as exc:
            problems.append(str(exc))
    if verdict is None:
        detail = "environment problem: " + " | then: ".join(problems)
        return Outcome(entry["name"], expected, "environment problem", False, detail, time.monotonic() - start)
    as_dict = _as_dict(verdict)
    ok, detail = judge(entry, as_dict)
    if problems:
        detail = f"{detail} (evaluated again after an environment problem: {problems[0]})"
    actual = verdict.status.value + (f" + arch {verdict.arch_check.status.value}" if expect.get("arch") else "")
    if "held" in expect:
        integrity = as_dict.get("integrity")
        holds = [str(h.get("code")) for h in integrity.get("holds") or []] if isinstance(integrity, dict) else None
        actual += " + held " + ("?" if holds is None else "/".join(holds) or "none")
    outcome = Outcome(entry["name"], expected, actual, ok, detail, time.monotonic() - start)
    outcome.gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    outcome.verdict = as_dict
    if entry.get("clean_after"):
        target = load()["tasks"][entry["on"]]
        # The legitimate kernel runs with the default limits, not the ones the trick was given.
        clean = evaluate_entry({**entry, "options": {}}, source_path=REPO / target["clean"], stages="correctness")
        outcome.clean_after = clean.status.value
        outcome.ok = outcome.ok and clean.status == OverallStatus.PASSED
    return outcome


def table(outcomes: list[Outcome]) -> str:
    rows = [("entry", "expected", "actual", "ok", "next legit", "compiled", "s", "detail")]
    for o in outcomes:
        mark = "not run" if o.skipped else ("yes" if o.ok else "NO")
        detail = " ".join((o.skipped or o.detail).split())
        compiled = (o.verdict.get("compile") or {}) if o.verdict else {}
        how = "-" if not compiled else "cache" if compiled.get("cached") else "nvcc"
        rows.append((o.name, o.expected, o.actual, mark, o.clean_after or "-", how, f"{o.seconds:.1f}", detail[:90]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--gpu-only", action="store_true")
    which.add_argument("--cpu-only", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="run the corpus this many times back to back")
    parser.add_argument("--only", help="comma-separated entry names, run in that order")
    parser.add_argument("--json", type=Path, help="write every outcome (with its verdict) here")
    parser.add_argument(
        "--prebuild",
        type=int,
        default=0,
        metavar="N",
        help="before round 1, compile the GPU entries' kernels into the compile cache with N parallel nvcc runs",
    )
    parser.add_argument(
        "--beside",
        type=int,
        default=2,
        metavar="N",
        help="in a round with GPU entries, run the CPU entries N at a time beside them (0: all one after another)",
    )
    parser.add_argument(
        "--gpus",
        metavar="all|A,B,...",
        help="spread each round's entries over these GPUs (CUDA_VISIBLE_DEVICES values, or 'all' of this host's), "
        "one process pinned to each; the rounds stay back to back",
    )
    parser.add_argument(
        "--no-compile-cache",
        action="store_true",
        help="compile every kernel every time (default: a compile cache private to this run, as a worker keeps one)",
    )
    args = parser.parse_args(argv)
    if not args.no_compile_cache and not os.environ.get("EVALUATOR_COMPILE_CACHE"):
        os.environ["EVALUATOR_COMPILE_CACHE"] = tempfile.mkdtemp(prefix="ptxbench-corpus-cache-")
    print("compile cache:", os.environ.get("EVALUATOR_COMPILE_CACHE") or "off", flush=True)
    chosen = entries(gpu=True if args.gpu_only else False if args.cpu_only else None)
    if args.only:
        # In the order given, so that a run cut short has the entries named first; a name that is no entry of this
        # selection is refused rather than left out in silence.
        wanted = list(dict.fromkeys(n for n in args.only.split(",") if n))
        by_name = {e["name"]: e for e in chosen}
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            parser.error(f"--only names no entry of this selection: {', '.join(unknown)}")
        chosen = [by_name[n] for n in wanted]
    caps = capabilities(gpu=any(e.get("gpu") for e in chosen))
    print("needs here:", {k: v or "met" for k, v in caps.items()}, flush=True)
    gpus = gpu_list(args.gpus) if args.gpus else []
    if len(gpus) > 1:
        print(f"each round spread over {len(gpus)} GPUs: {', '.join(gpus)}", flush=True)
    if args.prebuild and os.environ.get("EVALUATOR_COMPILE_CACHE"):
        prebuild(chosen, args.prebuild)
    everything = []
    failed = not_run = 0
    for round_no in range(1, args.repeat + 1):
        start = time.monotonic()
        record = {"round": round_no, "complete": False, "wall_seconds": 0.0, "outcomes": []}
        everything.append(record)
        # A spread round's parts print their outcomes as they end; the round's record takes them when it ends.
        done = _recorder(round_no, record, everything, args.json, echo=len(gpus) <= 1)
        if len(gpus) > 1:
            passed_on = ["--no-compile-cache"] if args.no_compile_cache else []
            outcomes = run_spread_round(
                chosen, gpus, round_no, done, beside=args.beside, json_path=args.json, passed_on=passed_on
            )
        else:
            outcomes = run_round(chosen, caps, done, beside=args.beside)
        record["complete"], record["wall_seconds"] = True, time.monotonic() - start
        _save(args.json, everything)
        print(f"\n== corpus round {round_no}: {len(outcomes)} entries, wall time {record['wall_seconds']:.1f} s ==")
        print(table(outcomes), flush=True)
        failed += sum(not o.ok and not o.skipped for o in outcomes)
        not_run += sum(bool(o.skipped) for o in outcomes)
    if not_run:
        print(f"not run: {not_run} entr{'y' if not_run == 1 else 'ies'} (needs unmet here); not ok", flush=True)
    return 1 if failed else 4 if not_run else 0


def _recorder(
    round_no: int, record: dict[str, Any], everything: list[dict[str, Any]], path: Path | None, *, echo: bool = True
) -> Callable[[Outcome], None]:
    """What to do with each outcome of a round as it ends (from any thread): print it (unless `echo` is off),
    add it to the round's record, save everything (a run stopped by its time limit keeps what it did)."""
    lock, start = threading.Lock(), time.monotonic()

    def done(outcome: Outcome) -> None:
        verdict = "not run: " + outcome.skipped if outcome.skipped else "ok" if outcome.ok else "NOT OK"
        with lock:
            if echo:
                print(f"  [{round_no}] {outcome.name}: {outcome.actual} ({verdict})", flush=True)
            record["outcomes"].append(outcome.__dict__)
            record["wall_seconds"] = time.monotonic() - start
            _save(path, everything)

    return done


def run_round(
    chosen: list[dict[str, Any]], caps: dict[str, str | None], done: Callable[[Outcome], None], *, beside: int
) -> list[Outcome]:
    """Every entry once, each outcome handed to `done` as it ends; the outcomes in `chosen`'s order.

    With `beside` > 0 and GPU entries to run here, the CPU entries (no GPU stage: policy, compile and SASS only) run
    `beside` at a time in threads while the GPU entries run one after another in this thread. They never touch the
    GPU; what the GPU entries see of them is a few busy cores of the host, as on a loaded worker."""

    def one(entry: dict[str, Any]) -> Outcome:
        outcome = run_entry(entry, caps)
        done(outcome)
        return outcome

    gpu_here = any(e.get("gpu") and not unmet(e, caps) for e in chosen)
    # An entry with planted secrets changes this process's environment while it runs: never in a thread.
    aside = [e for e in chosen if not e.get("gpu") and not e.get("secrets")] if beside > 0 and gpu_here else []
    by_name: dict[str, Outcome] = {}
    with ThreadPoolExecutor(max_workers=max(1, beside)) as pool:
        pending = {e["name"]: pool.submit(one, e) for e in aside}
        for entry in chosen:
            if entry["name"] not in pending:
                by_name[entry["name"]] = one(entry)
        by_name.update({name: future.result() for name, future in pending.items()})
    return [by_name[e["name"]] for e in chosen]


def gpu_list(spec: str) -> list[str]:
    """The GPUs named by `--gpus`: 'all' is every GPU nvidia-smi lists here, by UUID (what a worker pins itself to)."""
    if spec.strip() != "all":
        return [g.strip() for g in spec.split(",") if g.strip()]
    from portal.submissions.gpu import detect_gpus  # the worker's own reading of the host's GPUs; needs no Django

    return [gpu.uuid for gpu in detect_gpus()]


def spread(chosen: list[dict[str, Any]], parts: int) -> list[list[dict[str, Any]]]:
    """`chosen` dealt into `parts` lists, GPU entries and CPU entries each in turn, so that every part gets its
    share of the GPU time (the GPU entries run one after another on a GPU; the CPU ones run beside them)."""
    dealt: list[list[dict[str, Any]]] = [[] for _ in range(parts)]
    for kind in (True, False):
        for i, entry in enumerate(e for e in chosen if bool(e.get("gpu")) == kind):
            dealt[i % parts].append(entry)
    return dealt


_PRINTED_OUTCOME = re.compile(r"^(\s+)\[1\] ")
# The relays of a spread round print from one thread each: print writes a line and its end separately, so two
# relays could splice their lines into one (seen on a loaded 2-core machine).
_PRINT_LOCK = threading.Lock()


def _say(text: str) -> None:
    """One whole line on stdout, whichever thread prints beside it."""
    with _PRINT_LOCK:
        print(text, flush=True)


def run_spread_round(
    chosen: list[dict[str, Any]],
    gpus: list[str],
    round_no: int,
    done: Callable[[Outcome], None],
    *,
    beside: int,
    json_path: Path | None,
    passed_on: list[str] | None = None,
) -> list[Outcome]:
    """One round with `chosen` spread over `gpus`: a process of this script per GPU, pinned to it through
    CUDA_VISIBLE_DEVICES as a GPU worker pins itself, each running its part once; the round ends when every part
    has. Each part's outcomes come from the file that process writes as it goes, so a part that dies keeps what it
    finished, and each entry it did not finish is a failed outcome naming why."""
    if json_path is None:
        folder = Path(tempfile.mkdtemp(prefix=f"ptxbench-corpus-round{round_no}-"))
    else:  # beside the run's record, where a run cut short leaves each part's outcomes so far
        folder = json_path.with_name(f"{json_path.name}.round{round_no}")
        folder.mkdir(parents=True, exist_ok=True)
    procs = []
    for i, (gpu, part) in enumerate(zip(gpus, spread(chosen, len(gpus)), strict=True)):
        if not part:
            continue
        out = folder / f"gpu{i}.json"
        out.unlink(missing_ok=True)
        argv = [sys.executable, str(Path(__file__).resolve()), "--only", ",".join(e["name"] for e in part)]
        argv += ["--json", str(out), "--beside", str(beside), *(passed_on or [])]
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        relay = threading.Thread(target=_relay, args=(proc, round_no, gpu), daemon=True)
        relay.start()
        procs.append((proc, relay, out, part, gpu))
    by_name: dict[str, Outcome] = {}
    for proc, relay, out, part, gpu in procs:
        code = proc.wait()
        relay.join()
        finished = _part_outcomes(out)
        for entry in part:
            outcome = finished.get(entry["name"])
            if outcome is None:
                why = f"the process of GPU {gpu} ended (exit {code}) before this entry finished"
                outcome = Outcome(entry["name"], "/".join(entry["expect"]["status"]), "no outcome", False, why, gpu=gpu)
                _say(f"  [{round_no}] {entry['name']}: no outcome (NOT OK): {why}")
            by_name[entry["name"]] = outcome
    ordered = [by_name[e["name"]] for e in chosen if e["name"] in by_name]
    # The round's record in the order chosen (the manifest's, or --only's), whichever part ended first.
    for outcome in ordered:
        done(outcome)
    return ordered


def _relay(proc: subprocess.Popen[str], round_no: int, gpu: str) -> None:
    """A part's output on this process's: its outcome lines numbered with the round and marked with the GPU, its
    other lines (a traceback, the time-outs of a sandbox) marked with the GPU; its own table is left out (the round's
    table follows)."""
    assert proc.stdout is not None
    table = False
    for line in proc.stdout:
        line = line.rstrip("\n")
        table = table or line.startswith("== corpus round")
        if _PRINTED_OUTCOME.match(line):
            _say(_PRINTED_OUTCOME.sub(rf"\g<1>[{round_no}] ", line) + f" on {gpu}")
        elif line.strip() and not table:
            _say(f"    ({gpu}) {line}")


def _part_outcomes(path: Path) -> dict[str, Outcome]:
    """The outcomes a part's process wrote (its one round), by entry name; none when it wrote nothing."""
    try:
        rounds = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    fields = set(Outcome.__dataclass_fields__)
    outcomes = [Outcome(**{k: v for k, v in o.items() if k in fields}) for r in rounds for o in r.get("outcomes", [])]
    return {o.name: o for o in outcomes}


def prebuild(chosen: list[dict[str, Any]], workers: int) -> list[str]:
    """Fill the compile cache with the GPU entries' kernels, CUDA and Triton (about six seconds of compile each),
    and what the SASS stage reads from each CUDA one (the disassembly and resource usage an entry keeps, about a
    second of cuobjdump each), `workers` at a time: the rounds then spend their time on the GPU stages. The cache
    key is the source, target, workloads and toolchain, so nothing else changes. The names of the entries built."""
    todo = [e for e in chosen if e.get("gpu") and not e.get("needs") and not e.get("secrets")]
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda e: evaluate_entry(e, stages="sass"), todo))
    print(f"prebuilt {len(todo)} kernels in {time.monotonic() - start:.1f} s ({workers} at a time)", flush=True)
    return [e["name"] for e in todo]


def _save(path: Path | None, everything: list[dict[str, Any]]) -> None:
    if path is not None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(everything, indent=1, default=str))
        tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
