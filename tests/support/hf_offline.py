"""Hugging Face `datasets` and `huggingface_hub` offline for one test, whatever ran before it in the process.

Both read HF_DATASETS_OFFLINE / HF_HUB_OFFLINE once, when first imported, into module constants. Setting the
variables is not enough when an earlier test in the same worker imported them first: `datasets.load_dataset`
then sends a download-count request (a HEAD to s3.amazonaws.com) that the DNS guard refuses, and the test fails
depending on what ran before it. This sets the variables and the constants both."""

from __future__ import annotations

import pytest


def hf_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
