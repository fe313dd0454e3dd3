"""What a submission may say before anything compiles it: the CUDA source policy and the Triton AST policy.

Trusted parent only. Pure readers of the submitted text.
"""
