#!/usr/bin/env python
"""Django's command-line utility for PTXBench Portal."""

import os
import sys
from pathlib import Path


def _development_data_folder() -> None:
    """A command run by hand against a data folder that `make run` serves is run as that portal runs: with
    DEBUG=1 and the secrets `make run` keeps there, instead of asking for a SECRET_KEY that portal never had.
    Only where `make run` left its secret and the environment says nothing of DEBUG or SECRET_KEY: a production
    host sets them, and elsewhere a missing SECRET_KEY still fails loudly (with what to set)."""
    if "DEBUG" in os.environ or "SECRET_KEY" in os.environ:
        return
    data = Path(os.environ.get("PORTAL_DATA_DIR") or Path(__file__).resolve().parent / "data")
    if (data / "dev-secret-key").is_file():
        os.environ["DEBUG"] = "1"


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    _development_data_folder()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
