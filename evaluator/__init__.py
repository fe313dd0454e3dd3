"""PTXBench evaluator: a plain Python library (no Django) that scores one kernel.

Public entry points live in submodules; `python -m evaluator --help` is the command line.

- `evaluator.pipeline.evaluate(source, task, arch, *, workloads="all", stages=STAGES, on_stage=None,
  options=Options()) -> Verdict`: the whole evaluation (policy, compile, sass, correctness, arch, timing).
- `evaluator.verdict`: the typed result records and `to_json` / `from_json`; schema in verdict.schema.json.
- `evaluator.policy.check_source(source) -> list[PolicyFinding]`
- `evaluator.compile.compile_kernel(source, arch, workdir, *, timeout_s=120) -> CompiledKernel`
- `evaluator.sass.count_families(sass_text, arch, target_families=None) -> SassCounts` (pure)
- `evaluator.ncu.parse_source_page(csv_text) -> list[SourceKernel]` and `decide_arch(...) -> ArchCheck` (pure)
- `evaluator.taskdata.find_task(root, name) -> Task`
"""

__version__ = "0.1.0"
