"""The `ptxbench` command-line client of a PTXBench Portal (docs/cli.md). Standard library only."""

__version__ = "0.1.0"
