"""PTXBench evaluator: a plain Python library (no Django) that scores one kernel.

Public entry points live in submodules; `python -m evaluator --help` is the command line.

- `evaluator.pipeline.evaluate(source, task, arch, *, workloads="all", stages=STAGES, on_stage=None,
  options=Options()) -> Verdict`: the whole evaluation (policy, compile, sass, correctness, arch, timing).
- `evaluator.both_sides.verdict`: the typed result records and `to_json` / `from_json`; schema in verdict.schema.json.
- `evaluator.source_policy.policy.check_source(source) -> list[PolicyFinding]`
- `evaluator.build.compile.compile_kernel(source, arch, workdir, *, timeout_s=120) -> CompiledKernel`
- `evaluator.binaries.sass.count_families(sass_text, arch, target_families=None) -> SassCounts` (pure)
- `evaluator.arch_check.ncu.parse_source_page(csv_text) -> list[SourceKernel]` and `decide_arch(...) -> ArchCheck` (pure)
- `evaluator.both_sides.taskdata.find_task(root, name) -> Task`

Layout: one folder per concern, and the folders show the trust boundary (docs/architecture.md, "Evaluator
modules"; checked by tests/evaluator/test_trust_layout.py).

- `evaluator/candidate_process/`: code that executes inside processes of candidate shape (the candidate's own
  process, the profiled process, the trusted-baseline process) and in the Triton ahead-of-time compile, which runs
  the submission's Python. Submitted code can rewrite anything there, so whatever it reports is a hint to the
  parent unless cross-checked. The parent starts those modules by name (`python -m`) and never imports them.
- `evaluator/both_sides/`: what those processes load from the rest of the package (the protocol, the lent slots,
  the inputs, the task data and the registries they read), and nothing it does not import itself.
- Everything else is the trusted parent: this folder's root (the command, the stage order, the language seam, host
  facts, the verdict schema), `source_policy/`, `build/`, `binaries/`, `measure/`, `arch_check/`, `checks/`,
  `isolation/` and `suite/`. This file runs in every process of the package: it holds no import.
"""

__version__ = "0.1.0"
