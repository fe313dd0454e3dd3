"""Shared data for the ranking, compare and API-name tests (pytest and browser): a kernel board where a
faster unverified kernel exists beside verified ones, and one model with three runs."""

from __future__ import annotations

from datetime import timedelta

from tests.support import leaderboard_factories as lf


def mixed_board() -> dict:
    """gemm on sm_90a. Verified: slow.cu 1.1x, mid.cu 1.3x. Unverified but faster: absent.cu 2.0x,
    token.cu 1.8x, idle.cu 1.6x (not_executed), unchecked.cu 1.7x (arch stage not run)."""
    from tests.support.factories import sync_catalog

    sync_catalog()
    kim, lee = lf.user("kim"), lf.user("lee")
    return {
        "absent": lf.evaluation(owner=kim, name="absent.cu", speedup=2.0, arch_status="absent", full=False),
        "token": lf.evaluation(owner=lee, name="token.cu", speedup=1.8, arch_status="token", full=False),
        "unchecked": lf.evaluation(
            owner=lee, name="unchecked.cu", speedup=1.7, arch_status="not_requested", full=False
        ),
        "idle": lf.evaluation(owner=kim, name="idle.cu", speedup=1.6, arch_status="not_executed", full=False),
        "mid": lf.evaluation(owner=lee, name="mid.cu", speedup=1.3),
        "slow": lf.evaluation(owner=kim, name="slow.cu", speedup=1.1, full=False),
    }


def three_runs_of_one_model() -> dict:
    """vendor/model-x on H200, three runs on gemm at k=8 (n, correct, correct_arch, best, tokens):
    (4,2,1,1.2,1_000_000) (4,3,2,1.5,200_000) (4,4,3,1.8,34_000); plus one run of it on an H100 (its own
    row) and vendor/model-y once on H200 (4,4,4,1.0,500)."""
    from tests.support.factories import sync_catalog

    sync_catalog()
    ann = lf.user("ann")
    runs = []
    for day, (c, ca, best, tokens) in enumerate([(2, 1, 1.2, 1_000_000), (3, 2, 1.5, 200_000), (4, 3, 1.8, 34_000)]):
        run = lf.model_run(ann, model="vendor/model-x", display_name="Model X", created_at=lf.T0 + timedelta(days=day))
        lf.metrics(run, lf.GEMM, 8, 4, c, ca, best, tokens)
        runs.append(run)
    h100 = lf.model_run(ann, model="vendor/model-x", display_name="Model X", gpu="NVIDIA H100 80GB HBM3")
    lf.metrics(h100, lf.GEMM, 8, 4, 1, 0, 0.9, 100)
    y = lf.model_run(ann, model="vendor/model-y", display_name="Model Y")
    lf.metrics(y, lf.GEMM, 8, 4, 4, 4, 1.0, 500)
    return {"x": runs, "x_h100": h100, "y": y}
