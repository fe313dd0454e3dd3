"""The columns of each config of a public result snapshot (docs/api.md, "Public result datasets"). One Arrow schema
per config: the Parquet files have exactly these columns, also with 0 rows, and the JSONL lines the same keys. The
measurements carry the verdict's names (portal/core/serializers.py MEASUREMENT_FIELDS) since format results-2, and
a row's board section is `board_section` since results-3, and `arch_rests_on_profile` is there since results-4
(snapshot.py MANIFEST_FORMAT); versions published before keep their names and columns."""

from __future__ import annotations

import pyarrow as pa

_ARTIFACT = pa.struct([("name", pa.string()), ("sha256", pa.string()), ("bytes", pa.int64()), ("url", pa.string())])

# An evaluation of a kernel: the `ranked` and `held` configs.
EVALUATION_SCHEMA = pa.schema(
    [
        ("evaluation_id", pa.string()),
        ("submission_id", pa.int64()),
        ("task", pa.string()),
        ("arch", pa.string()),
        ("kind", pa.string()),  # kernel (an upload), reference (expert kernel), agent (a model run's turn)
        ("language", pa.string()),  # cuda or triton
        ("name", pa.string()),
        ("submitter", pa.string()),
        ("synthetic", pa.bool_()),  # made up by `seed_leaderboard` (demo data), never measured
        ("source", pa.string()),
        ("source_sha256", pa.string()),
        ("status", pa.string()),
        ("arch_status", pa.string()),
        ("arch_full", pa.bool_()),
        ("arch_rests_on_profile", pa.bool_()),  # verified on the profiled call alone (docs/api.md)
        ("verdict_phrase", pa.string()),
        ("ptxbench_verified", pa.bool_()),
        ("tensor_core_share", pa.float64()),
        ("latency_ms", pa.float64()),
        ("baseline_latency_ms", pa.float64()),  # the trusted library baseline on the headline workload
        ("speedup_factor", pa.float64()),
        ("speedup_ci95_low", pa.float64()),
        ("speedup_ci95_high", pa.float64()),
        ("tflops", pa.float64()),
        ("fraction_of_peak", pa.float64()),
        ("gpu_name", pa.string()),
        ("driver_version", pa.string()),
        ("evaluator_version", pa.string()),
        ("review_state", pa.string()),  # "" (none needed), held, confirmed
        ("finished_at", pa.string()),  # ISO 8601, UTC
        ("rank", pa.int64()),  # the kernel board's rank; null for references and kernels that are not verified
        ("board_section", pa.string()),  # the board section (its arch_status); "" outside the board
        ("verdict_sha256", pa.string()),
        ("evaluation_url", pa.string()),
        ("bundle_url", pa.string()),
        ("artifacts", pa.list_(_ARTIFACT)),
    ]
)

# A model run's turn: the `turns` config.
TURN_SCHEMA = pa.schema(
    [
        ("run_id", pa.int64()),
        ("run_kind", pa.string()),  # model, or repair (Fixit)
        ("model", pa.string()),
        ("display_name", pa.string()),
        ("submitted_by", pa.string()),
        ("arch", pa.string()),
        ("language", pa.string()),
        ("task", pa.string()),
        ("trajectory_id", pa.int64()),
        ("trajectory_index", pa.int64()),
        ("turn", pa.int64()),  # 0-based
        ("status", pa.string()),
        ("arch_status", pa.string()),
        ("speedup_factor", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("reasoning_tokens", pa.int64()),
        ("finish_reason", pa.string()),
        ("kernel", pa.string()),
        ("kernel_sha256", pa.string()),
        ("evaluation_id", pa.string()),
        ("evaluator_version", pa.string()),
        ("gpu_name", pa.string()),
        ("review_state", pa.string()),
        ("synthetic", pa.bool_()),
        ("finished_at", pa.string()),
        ("evaluation_url", pa.string()),
    ]
)

# Config name -> schema, in the order the card lists them.
CONFIGS = {"ranked": EVALUATION_SCHEMA, "held": EVALUATION_SCHEMA, "turns": TURN_SCHEMA}
