"""Modules used on both sides of the trust boundary: the trusted parent, and every process of candidate shape.

Everything here is also loaded in processes where submitted code runs (evaluator/candidate_process/), so there it
is as patchable as the rest of that process: a figure or message built with it on that side is a hint the parent
cross-checks. The parent uses the same modules as trusted code. Nothing here imports a module from outside this
folder (tests/evaluator/test_trust_layout.py): a new import would bring more of the trusted side into candidate
processes.
"""
