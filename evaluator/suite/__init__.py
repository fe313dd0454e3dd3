"""The task suite beyond one task: knowledge packs, the expert reference kernels, FlashInfer-Trace data sets.

Trusted parent only (scripts and the portal read them too).
"""
