"""Settings for the test run: portal.settings as a development machine has them (DEBUG=1 when the settings are
read; pytest-django then runs each test with DEBUG off) and a throwaway SECRET_KEY. pytest-django reads the
settings before any conftest, so the environment is set here; a variable already set wins."""

import os

os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("SECRET_KEY", "tests-only-" + "0" * 50)

from portal.settings import *  # noqa: E402, F403

# Django's advice for test runs: a fast password hasher. PBKDF2 costs ~0.35 s of CPU per user created and per
# password checked, and nothing in the suite is about the hash's strength (production keeps portal.settings').
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
