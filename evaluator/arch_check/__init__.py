"""Layer 2 of the score: whether the target instructions really execute and carry the work.

Trusted parent only: the Nsight Compute profile and its parser, the tensor cores' share of the FLOPs by the
architecture rule, and the NVML GPM witness over the candidate's timing process.
"""
