"""Running a workload: the candidate process and the trusted baseline on lent slots, the parent's clock, outputs compared.

Trusted parent only; it starts the processes of evaluator/candidate_process/ by name and never imports them.
"""
