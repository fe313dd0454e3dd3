"""`ptxbench`: the command line of a PTXBench Portal (docs/cli.md).

Exit status: 0 success (with --wait: the kernel PASSED), 1 an error (the API's refusal in its own words, the
network, a local file), 2 bad arguments, 3 the kernel's verdict is a failure, 4 only the static stages ran
(STATIC_ONLY: nothing measured), 5 the evaluation could not run (failed or cancelled), 6 --wait gave up."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from ptxbench_cli import __version__, config, download, progress, registry
from ptxbench_cli.api import API, ApiError, Client, CliError
from ptxbench_cli.text import clean, number, one_line, table

EXIT_KERNEL_FAILED = 3
EXIT_STATIC_ONLY = 4
EXIT_NOT_EVALUATED = 5
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def note(line: str) -> None:
    sys.stderr.write(line + "\n")


def _client(args: argparse.Namespace, *, need_token: bool = False) -> Client:
    try:
        settings = config.resolve(args.url)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if need_token and not settings.token:
        raise CliError(f"no API token for {settings.url}: run `ptxbench login` (or set PTXBENCH_TOKEN)")
    return Client(settings.url, settings.token)


# --------------------------------------------------------------------------- login, logout


def cmd_login(args: argparse.Namespace) -> int:
    try:
        url = config.resolve(args.url).url
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if sys.stdin.isatty():
        token = getpass.getpass(f"API token (make one at {url}/accounts/tokens/): ")
    else:
        token = sys.stdin.readline()
    token = token.strip()
    if not token:
        raise CliError("no token given (paste it at the prompt, or pipe it on standard input)")
    # Any API read checks a token sent with it: a wrong, revoked or expired one is refused in the API's words.
    Client(url, token).get_json(f"{API}/leaderboard/summary")
    path = config.save_token(url, token)
    out(f"logged in to {url}; token stored in {path} (mode 600)")
    return 0


def cmd_logout(args: argparse.Namespace) -> int:
    try:
        url = config.resolve(args.url).url
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if config.forget_token(url):
        out(f"forgot the token for {url}")
    else:
        out(f"no token stored for {url}")
    return 0


# --------------------------------------------------------------------------- tasks, board


def cmd_tasks(args: argparse.Namespace) -> int:
    client = _client(args)
    known = registry.fetch(client)
    known.check_arch(args.arch)
    # With no list from the portal, its summary's own default architecture (arch=None is left out of the query).
    arches: list[str | None] = [args.arch] if args.arch else list(known.arches or (None,))
    by_task: dict[str, list[str]] = {}
    for arch in arches:
        answer = client.get_json(f"{API}/leaderboard/summary", arch=arch)
        for slug in answer.get("tasks") or []:
            by_task.setdefault(slug, []).append(arch or one_line((answer.get("query") or {}).get("arch"), 40))
    if args.format == "json":
        out(json.dumps([{"task": t, "arches": a} for t, a in by_task.items()], indent=2))
    else:
        out(table([[t, ", ".join(a)] for t, a in by_task.items()], ["task", "arch"]))
    return 0


def cmd_board(args: argparse.Namespace) -> int:
    client = _client(args)
    known = registry.fetch(client)
    known.check_arch(args.arch)
    known.check_language(args.language)
    params = {
        "task": args.task,
        "arch": args.arch,
        "gpu": args.gpu,
        "language": args.language,
        "show": "all" if args.all else None,
    }
    if args.format == "csv":
        sys.stdout.buffer.write(
            client.request("GET", f"{API}/leaderboard/kernels", params={**params, "format": "csv"}).body
        )
        sys.stdout.flush()
        return 0
    board = client.get_json(f"{API}/leaderboard/kernels", **params)
    if args.format == "json":
        out(json.dumps(board, indent=2))
        return 0
    rows = [
        [
            r.get("rank") or "-",
            r.get("name"),
            r.get("submitter"),
            r.get("language"),
            number(r.get("speedup_factor"), "{:.3f}x"),
            number(r.get("tflops"), "{:.1f}"),
            r.get("badge"),
            r.get("gpu_name"),
            r.get("submission_id"),
        ]
        for r in board.get("rows") or []
    ]
    out(table(rows, ["rank", "name", "submitter", "lang", "speedup", "TFLOP/s", "arch check", "gpu", "submission"]))
    if not rows:
        note(f"no kernels on this board yet ({'any state' if args.all else 'verified only; --all shows the others'})")
    return 0


# --------------------------------------------------------------------------- submit, status


def _language(path: Path, choice: str, known: registry.Registry) -> str | None:
    """The chosen language, else the one the file's suffix says; None leaves it to the portal (by the file name)."""
    if choice != "auto":
        known.check_language(choice)
        return choice
    return known.language_of(path)


def _exit_for(evaluation: dict[str, Any]) -> int:
    state = evaluation.get("state")
    if state != "done":
        return EXIT_NOT_EVALUATED
    status = (evaluation.get("result") or {}).get("status")
    if status == "PASSED":
        return 0
    return EXIT_STATIC_ONLY if status == "STATIC_ONLY" else EXIT_KERNEL_FAILED


def _print_evaluation(client: Client, evaluation: dict[str, Any]) -> None:
    out(f"evaluation {evaluation.get('id')}: {clean(evaluation.get('state'))}")
    result = evaluation.get("result")
    if result:
        out(f"  verdict: {one_line(result.get('status'))} ({one_line(result.get('verdict_phrase'))})")
        figures = [
            ("speedup", number(result.get("speedup_factor"), "{:.3f}x")),
            ("latency", number(result.get("latency_ms"), "{:.4g} ms")),
            ("library", number(result.get("baseline_latency_ms"), "{:.4g} ms")),
            ("TFLOP/s", number(result.get("tflops"), "{:.1f}")),
            ("tensor-core share", number(result.get("tensor_core_share"), "{:.2f}")),
            ("gpu", one_line(result.get("gpu_name")) or "-"),
        ]
        out("  " + ", ".join(f"{k} {v}" for k, v in figures))
        if result.get("review_state"):
            out(f"  review: {one_line(result['review_state'])} {one_line(result.get('review_reason') or '')}".rstrip())
        errors = evaluation.get("compile_errors") or []
        if errors:
            out("  compiler:")
            for line in errors:
                out(f"    {clean(line)}")
    elif evaluation.get("error"):
        out(f"  error: {one_line(evaluation['error'])}")
    else:
        out(f"  {progress.describe(evaluation)}")
    out(f"  evidence: {client.url}/evidence/evaluations/{evaluation.get('id')}/")


def cmd_submit(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    if not data.strip():
        raise CliError(f"{args.file} is empty: there is no kernel to submit")
    client = _client(args, need_token=True)
    known = registry.fetch(client)
    known.check_arch(args.arch)
    language = _language(path, args.language, known)
    fields = {"task": args.task, "arch": args.arch, "name": args.name or path.name}
    if language:
        fields["language"] = language
    if args.note:
        fields["note"] = args.note
    if args.force:
        fields["force"] = "true"
    response = client.post_multipart(f"{API}/submissions", fields, "file", path.name, data)
    submission = response.json()
    sid = submission.get("id")
    page = f"{client.url}/submissions/{sid}/"
    if submission.get("duplicate"):
        note(
            f"the same source was already submitted for this task and arch: submission {sid} (not re-run; --force runs it again)"
        )
    out(f"submission {sid}: {page}")
    if not args.wait:
        return 0
    evaluations = submission.get("evaluations") or []
    if not evaluations:
        raise CliError(f"submission {sid} has no public evaluation to wait for")
    evaluation_id = evaluations[0]["id"]
    watcher = progress.Watcher()
    final = progress.wait_for(
        lambda: client.get_json(f"{API}/evaluations/{evaluation_id}"), timeout_s=args.timeout, watcher=watcher
    )
    _print_evaluation(client, final)
    if (final.get("result") or {}).get("status") == "PASSED" and submission.get("kind") == "kernel":
        note(f"the ranked check (fresh inputs from a secret seed) runs next: ptxbench status {sid}")
    return _exit_for(final)


def cmd_status(args: argparse.Namespace) -> int:
    client = _client(args)
    kind, ident = _parse_id(args.id)
    if kind == "evaluation":
        evaluation = client.get_json(f"{API}/evaluations/{ident}")
        if args.format == "json":
            out(json.dumps(evaluation, indent=2))
        else:
            _print_evaluation(client, evaluation)
        return 0
    submission = client.get_json(f"{API}/submissions/{ident}")
    if args.format == "json":
        out(json.dumps(submission, indent=2))
        return 0
    out(
        f"submission {submission.get('id')}: {one_line(submission.get('name'))} · {one_line(submission.get('task'))} · "
        f"{one_line(submission.get('arch'))} · {one_line(submission.get('language'))}"
    )
    for evaluation in submission.get("evaluations") or []:
        _print_evaluation(client, evaluation)
    check = submission.get("ranked_check") or {}
    # The message is a sentence that already says the state ("passed on fresh inputs ..."): one of the two.
    out(f"ranked check: {one_line(check.get('message') or check.get('state'))}")
    return 0


def _submission_id(value: object) -> str:
    """A submission id from the portal as the digits of a positive integer, or a refusal."""
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isascii():
        value = None
    text = str(value) if value is not None else ""
    if not text.isdigit() or int(text) <= 0:
        raise CliError(f"the portal answered an invalid submission id {one_line(repr(value), 80)}; nothing was written")
    return str(int(text))


def _parse_id(text: str) -> tuple[str, str]:
    text = text.strip()
    if text.isascii() and text.isdigit():
        return "submission", str(int(text))
    if UUID_RE.match(text):
        return "evaluation", text.lower()
    raise CliError(f"{text[:80]!r} is neither a submission id (a number) nor an evaluation id (a uuid)", 2)


# --------------------------------------------------------------------------- download


def cmd_download(args: argparse.Namespace) -> int:
    wanted = download.parse_what(args.what)
    client = _client(args)
    kind, ident = _parse_id(args.id)
    evaluation_id = None
    if kind == "evaluation":
        evaluation_id = ident
        # The answer names the folder written below: only a positive integer may (a portal, or anyone on plain
        # http, could answer "../.." and have the files land outside --output).
        ident = _submission_id(client.get_json(f"{API}/evaluations/{ident}").get("submission"))
    submission = client.get_json(f"{API}/submissions/{ident}")
    bundle = client.request("GET", f"/evidence/submissions/{ident}/bundle.zip")
    files = download.check_bundle(bundle.body, bundle.headers.get("x-content-sha256", ""), submission["source_sha256"])
    picked, missing = download.pick(files, wanted, evaluation_id)
    folder = Path(args.output) / f"submission-{ident}"
    written = download.write(folder, picked)
    if "bundle" in wanted:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"submission-{ident}.zip"
        target.write_bytes(bundle.body)
        written.append(target)
        picked.append(download.Picked(target.name, bundle.body, download.sha256_hex(bundle.body)))
    for item, target in zip(picked, written, strict=True):
        out(f"{target}  sha256 {item.sha256}  ok")
    for what in missing:
        note(f"no {what} file in submission {ident}'s evidence")
    return 0


# --------------------------------------------------------------------------- dataset


def cmd_dataset(args: argparse.Namespace) -> int:
    """A public result snapshot's files, each checked against the sha256 the API lists, written only when all are."""
    client = _client(args)
    versions = client.get_json(f"{API}/results-datasets").get("versions") or []
    if args.version is not None:
        versions = [v for v in versions if v.get("version") == args.version]
    if not versions:
        raise CliError("no such result dataset version" if args.version is not None else "no result dataset yet")
    chosen = versions[0]
    version = chosen.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version <= 0:
        raise CliError(f"the portal answered an invalid dataset version {one_line(repr(version), 80)}")
    label = f"v{version}"  # names the folder written below: built from a checked integer only
    fetched = []
    for entry in chosen.get("files") or []:
        path = download.safe_path(str(entry.get("path", "")))
        body = client.request("GET", f"/datasets/{label}/{path}").body
        if download.sha256_hex(body) != entry.get("sha256"):
            raise download.DigestMismatch(f"{label}/{path} is not the file the API lists")
        fetched.append(download.Picked(path, body, entry["sha256"]))
    folder = Path(args.output) / label
    for item, target in zip(fetched, download.write(folder, fetched), strict=True):
        out(f"{target}  sha256 {item.sha256}  ok")
    note(f'open it with: datasets.load_dataset("{folder}", "ranked", split="train")')
    return 0


# --------------------------------------------------------------------------- run-model


def cmd_run_model(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {
        "base_url": args.endpoint,
        "model": args.model,
        "arch": args.arch,
        "tasks": [t.strip() for t in args.tasks.split(",") if t.strip()],
        "language": args.language,
        "pack": args.pack,
    }
    for key, value in (
        ("display_name", args.display_name),
        ("turns", args.turns),
        ("trajectories_per_task", args.trajectories),
        ("target_speedup", args.target_speedup),
        ("temperature", args.temperature),
    ):
        if value is not None:
            body[key] = value
    if args.api_key_env:
        key = os.environ.get(args.api_key_env, "")
        if not key:
            raise CliError(f"--api-key-env names {args.api_key_env}, which is not set")
        body["api_key"] = key  # from the environment, never the command line (process lists show arguments)
    client = _client(args, need_token=True)
    known = registry.fetch(client)
    known.check_arch(args.arch)
    known.check_language(args.language)
    run = client.post_json(f"{API}/runs", body).json()
    out(f"model run {run.get('id')}: {client.url}/runs/{run.get('id')}/ ({one_line(run.get('state'))})")
    return 0


# --------------------------------------------------------------------------- the parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptxbench",
        description="Submit kernels to a PTXBench Portal, watch them run, download their evidence, read the boards.",
        epilog="Environment: PTXBENCH_URL (the portal), PTXBENCH_TOKEN (an API token), PTXBENCH_RETRIES "
        "(attempts on network failures, default 4). Exit status: 0 ok / PASSED, 1 error, 2 bad arguments, "
        "3 kernel failed, 4 STATIC_ONLY, 5 not evaluated, 6 gave up waiting.",
    )
    parser.add_argument("--url", help="the portal's address (default: PTXBENCH_URL, else the one you logged in to)")
    parser.add_argument("--version", action="version", version=f"ptxbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, handler) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        sub.add_argument("--url", default=argparse.SUPPRESS, help="the portal's address")
        return sub

    command(
        "login",
        "store an API token for this portal (read from the prompt or standard input; checked first)",
        cmd_login,
    )
    command("logout", "forget the token stored for this portal", cmd_logout)

    sub = command("tasks", "list the tasks and the architectures they target", cmd_tasks)
    sub.add_argument("--arch", help="one architecture (default: every one the portal lists)")
    sub.add_argument("--format", choices=("table", "json"), default="table")

    sub = command(
        "submit", "submit a kernel file (.cu CUDA, .py Triton) and optionally wait for its verdict", cmd_submit
    )
    sub.add_argument("file", metavar="FILE")
    sub.add_argument("--task", required=True, help="task name, e.g. gemm_n7168_k5120 (ptxbench tasks)")
    sub.add_argument("--arch", required=True, help="an architecture the portal lists, e.g. sm_90a")
    sub.add_argument("--language", default="auto", help="a language the portal lists, e.g. cuda (default: by suffix)")
    sub.add_argument("--name", help="label on the boards (default: the file name)")
    sub.add_argument("--note")
    sub.add_argument("--force", action="store_true", help="evaluate again even if this source was submitted before")
    sub.add_argument("--wait", action="store_true", help="follow the stages and exit by the verdict")
    sub.add_argument("--timeout", type=float, default=3600.0, help="seconds --wait waits (default 3600)")

    sub = command("status", "a submission (a number) or an evaluation (a uuid)", cmd_status)
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--format", choices=("text", "json"), default="text")

    sub = command("download", "a submission's evidence, every file checked against the portal's sha256", cmd_download)
    sub.add_argument("id", metavar="ID", help="a submission id, or an evaluation uuid (only its files)")
    sub.add_argument(
        "--what",
        default=download.DEFAULT_WHAT,
        help=f"comma-separated: {','.join(download.WHATS)} (default: %(default)s)",
    )
    sub.add_argument("-o", "--output", default=".", metavar="DIR", help="written under DIR/submission-ID/")

    sub = command("board", "a task's kernel leaderboard on one architecture", cmd_board)
    sub.add_argument("--task", required=True)
    sub.add_argument("--arch", required=True)
    sub.add_argument("--format", choices=("table", "csv", "json"), default="table")
    sub.add_argument("--gpu", help="one GPU model, e.g. H200")
    sub.add_argument("--language", help="a language the portal lists, e.g. triton")
    sub.add_argument("--all", action="store_true", help="also the correct kernels that are not verified")

    sub = command(
        "dataset", "download a public result dataset version (Parquet, JSONL, card), sha256 checked", cmd_dataset
    )
    sub.add_argument("--version", type=int, help="a version number (default: the newest)")
    sub.add_argument("-o", "--output", default=".", metavar="DIR", help="written under DIR/v<N>/")

    sub = command("run-model", "start a model-endpoint run (POST /api/v2/runs; docs/agent.md)", cmd_run_model)
    sub.add_argument("--endpoint", required=True, help="OpenAI-compatible base URL")
    sub.add_argument("--model", required=True)
    sub.add_argument("--arch", required=True)
    sub.add_argument("--tasks", required=True, help="comma-separated task names")
    sub.add_argument("--api-key-env", metavar="VAR", help="name of the environment variable holding the endpoint's key")
    sub.add_argument("--language", default="cuda", help="a language the portal lists (default: cuda)")
    sub.add_argument("--pack", choices=("arch", "none"), default="arch")
    sub.add_argument("--display-name")
    sub.add_argument("--turns", type=int)
    sub.add_argument("--trajectories", type=int)
    sub.add_argument("--target-speedup", type=float)
    sub.add_argument("--temperature", type=float)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except ApiError as exc:
        status = "" if exc.message.startswith("HTTP ") else f" (HTTP {exc.status})"
        note(f"ptxbench: {exc.message}{status}")
        return exc.exit_code
    except CliError as exc:
        note(f"ptxbench: {one_line(exc.message)}")
        return exc.exit_code
    except KeyboardInterrupt:
        note("ptxbench: interrupted")
        return 130
