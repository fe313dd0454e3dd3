"""Code that executes inside processes of candidate shape: the other side of the evaluator's trust boundary.

Those processes are, each started by the trusted parent inside bubblewrap:

- the candidate's own process (`python -m evaluator.candidate_process.child`): loads the submission and calls its
  `run` (trials, timed calls, the batches the parent times with its own clock);
- the profiled process: the same module in profile mode, under Nsight Compute;
- the trusted-baseline process: the same module in `protocol.BASELINE_MODE`, which loads no submission (it has the
  candidate's shape so that the library baseline is timed the way a candidate is);
- the Triton ahead-of-time compile (`python -m evaluator.candidate_process.triton_aot`): runs a Triton submission's
  module body and its `run` on meta tensors, inside the compile sandbox.

Submitted code shares the interpreter with everything here and can patch, replace or read any of it
(`sys.modules`, `gc`, the process's memory). So whatever these modules report (timings, launch records, output
files, manifests, messages) is a hint to the parent unless the parent cross-checks it with what it measured or
read itself (docs/threat-model.md).

Rules (tests/evaluator/test_trust_layout.py): nothing outside this package imports from it (the parent starts
these modules by name as processes, never imports them), and these modules import from the rest of `evaluator`
only the modules used on both sides of the boundary listed in that test.
"""
