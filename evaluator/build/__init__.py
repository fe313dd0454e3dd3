"""Turning a submission into a loadable library: nvcc and its cache, the Triton compile, the include rules, the kernel ABI.

Trusted parent only. The compilers run sandboxed; what they write is hostile data read through
evaluator.both_sides.hostile_files.
"""
