"""RQ jobs for the public result snapshots: thin wrappers around the service."""

from __future__ import annotations


def snapshot_build(force: bool = False) -> str:
    from portal.datasets import services

    row = services.snapshot_build(force=force)
    return f"built {row.label}: {row.counts}" if row else "unchanged: nothing built"
