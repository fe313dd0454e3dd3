"""PTXBench evaluator: a plain Python library (no Django) that scores one kernel.

Public entry points live in submodules; `python -m evaluator --help` is the command line.
"""

__version__ = "0.1.0"
