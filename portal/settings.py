"""The one settings module. Everything that differs between machines comes from the environment
(see .env.example); the defaults work on a fresh clone with DEBUG=1 (`make run` sets it)."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from evaluator.both_sides.arches import ARCHES
from portal.dev_secrets import stored_secret
from portal.env import env_bool, env_int, env_list, env_required, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("PORTAL_DATA_DIR", str(BASE_DIR / "data")))
TASKS_DIR = Path(env_str("PORTAL_TASKS_DIR", str(BASE_DIR / "tasks")))
PACKS_DIR = TASKS_DIR / "packs"
ARTIFACTS_DIR = Path(env_str("PORTAL_ARTIFACTS_DIR", str(DATA_DIR / "artifacts")))
DATA_DIR.mkdir(parents=True, exist_ok=True)

# DEBUG is off unless asked for (`make run` asks, and says so). Off, SECRET_KEY is required; on and not given,
# a random one is made once and kept in the data folder (mode 600): no secret is ever a known default.
DEBUG = env_bool("DEBUG", False)
if DEBUG:
    SECRET_KEY = env_str("SECRET_KEY") or stored_secret(DATA_DIR / "dev-secret-key")
else:
    SECRET_KEY = env_required(
        "SECRET_KEY",
        "set it to a long random string whenever DEBUG is off (on a development machine, DEBUG=1 makes one and "
        "keeps it under PORTAL_DATA_DIR, as `make run` does)",
    )
# The debug page and error reports star out connection URLs, tokens and the Authorization header.
DEFAULT_EXCEPTION_REPORTER_FILTER = "portal.core.debug.ScrubbingExceptionReporterFilter"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django_rq",  # before the admin: its admin index template adds the link to the RQ dashboard
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "portal.core",
    "portal.catalog",
    "portal.accounts",
    "portal.submissions",
    "portal.leaderboard",
    "portal.agent",
    "portal.fixit",
    "portal.datasets",
    "portal.ops",  # commands across apps (`reconcile`); the top floor (docs/architecture.md, "Import direction")
]

MIDDLEWARE = [
    "portal.core.middleware.ApiDeprecationMiddleware",
    "portal.core.middleware.RequestSizeLimitMiddleware",
    "portal.core.middleware.ApiErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "portal.accounts.middleware.BannedUserLogoutMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "portal.core.middleware.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.core.context_processors.synthetic_demo",
            ],
        },
    },
]

# SQLite in the data folder unless DATABASE_URL says otherwise (postgres://user:pass@host:5432/name).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL") or f"sqlite:///{DATA_DIR / 'portal.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not memory, for the test database: tests run real worker processes against it.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test_portal.sqlite3")}
    # WAL lets the web tier read while a worker writes; the timeout rides out short write locks. IMMEDIATE
    # transactions take the write lock at BEGIN and so wait for it: a deferred one that read first and then
    # writes fails at once with "database is locked" when another process committed in between.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# One queue per GPU architecture (workers on hosts with that GPU; evaluator/both_sides/arches.py names them), plus LLM calls
# (`agent`, portal/agent/queueing.py) and CPU-only work (`default`).
GPU_QUEUE_NAMES = tuple(dict.fromkeys(arch.queue for arch in ARCHES.values()))
RQ_QUEUE_NAMES = (*GPU_QUEUE_NAMES, "agent", "default")
RQ_QUEUES = {
    name: {"URL": REDIS_URL, "DEFAULT_TIMEOUT": env_int("RQ_DEFAULT_TIMEOUT", 3600)} for name in RQ_QUEUE_NAMES
}
RQ_SHOW_ADMIN_LINK = True
# `manage.py rqworker` stops when asked instead of a minute later (portal/core/rq_workers.py).
RQ = {"WORKER_CLASS": "portal.core.rq_workers.PromptWorker"}

CACHES = {
    # Rendered page fragments, per process ({% cache %} in the leaderboard templates).
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # Leaderboard rows and charts, computed once per results generation and shared by every web worker
    # (portal/leaderboard/cache.py). Empty LEADERBOARD_REDIS_URL: the queues' REDIS_URL. Fails open: with Redis
    # unreachable each worker computes for itself.
    "leaderboard": {
        "BACKEND": "portal.leaderboard.store.SharedRedisCache",
        "LOCATION": env_str("LEADERBOARD_REDIS_URL", ""),
        "KEY_PREFIX": "leaderboard",
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Content-hashed names and a .gz of each file (plotly-basic.min.js: 1.2 MB -> 0.4 MB), linked by their hashed
    # names whenever the collected files are served (portal/core/static_storage.py): cached a year, immutable.
    "staticfiles": {"BACKEND": "portal.core.static_storage.CollectedStaticStorage"},
}

# WhiteNoise finds files through the finders on every request while DEBUG (edit and reload); those are the sources,
# without the .gz collectstatic writes. The run command (scripts/run_portal.sh) collects first and sets
# STATIC_FROM_FINDERS=0, so every page gets the compressed, hashed, cacheable copies from STATIC_ROOT.
WHITENOISE_USE_FINDERS = env_bool("STATIC_FROM_FINDERS", DEBUG)
WHITENOISE_AUTOREFRESH = WHITENOISE_USE_FINDERS

LOGIN_URL = "/accounts/login/"
# Failed-login and sign-up throttles (portal/accounts/throttle.py). Failures within LOGIN_WINDOW_SECONDS, counted
# per (address or network, username), per address, per network (IPv4 /24, IPv6 /64), per username and site-wide;
# the last two never refuse a network with no recent failures, so no one can lock an account out from elsewhere.
LOGIN_WINDOW_SECONDS = env_int("LOGIN_WINDOW_SECONDS", 900)
LOGIN_MAX_FAILURES = env_int("LOGIN_MAX_FAILURES", 10)  # per client address (and per network) and username
LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("LOGIN_MAX_FAILURES_PER_ADDRESS", 30)
LOGIN_MAX_FAILURES_PER_NETWORK = env_int("LOGIN_MAX_FAILURES_PER_NETWORK", 60)
LOGIN_MAX_FAILURES_PER_USERNAME = env_int("LOGIN_MAX_FAILURES_PER_USERNAME", 20)
LOGIN_MAX_FAILURES_GLOBAL = env_int("LOGIN_MAX_FAILURES_GLOBAL", 300)
# Sign-up forms posted per hour, whatever their outcome (each answer may say a name is taken), then accounts made.
SIGNUP_ATTEMPTS_PER_ADDRESS_PER_HOUR = env_int("SIGNUP_ATTEMPTS_PER_ADDRESS_PER_HOUR", 20)
SIGNUP_ATTEMPTS_PER_NETWORK_PER_HOUR = env_int("SIGNUP_ATTEMPTS_PER_NETWORK_PER_HOUR", 60)
SIGNUPS_PER_ADDRESS_PER_HOUR = env_int("SIGNUPS_PER_ADDRESS_PER_HOUR", 3)
SIGNUPS_PER_NETWORK_PER_HOUR = env_int("SIGNUPS_PER_NETWORK_PER_HOUR", 10)
SIGNUPS_PER_HOUR = env_int("SIGNUPS_PER_HOUR", 30)  # site-wide; refuses only networks that made an account this hour
# API tokens expire: API_TOKEN_DEFAULT_DAYS after creation unless the user picks fewer days, never beyond
# API_TOKEN_MAX_DAYS (portal/accounts/services.py). Tokens made before expiry existed got the default from then.
API_TOKEN_DEFAULT_DAYS = env_int("API_TOKEN_DEFAULT_DAYS", 90)
API_TOKEN_MAX_DAYS = env_int("API_TOKEN_MAX_DAYS", 365)
if not 1 <= API_TOKEN_DEFAULT_DAYS <= API_TOKEN_MAX_DAYS:
    raise ImproperlyConfigured(
        f"API_TOKEN_DEFAULT_DAYS={API_TOKEN_DEFAULT_DAYS} must be between 1 and API_TOKEN_MAX_DAYS={API_TOKEN_MAX_DAYS}"
    )
# Behind a reverse proxy: the request header (META name) whose last entry is the client address, e.g.
# HTTP_X_FORWARDED_FOR. Only for a proxy you run that always sets it; empty: REMOTE_ADDR.
CLIENT_ADDRESS_HEADER = env_str("CLIENT_ADDRESS_HEADER", "")
LOGIN_REDIRECT_URL = "/"

# Production hardening; all on whenever DEBUG is off (check --deploy stays clean).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", not DEBUG) else None
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("FILE_UPLOAD_MAX_MEMORY_SIZE", 2 * 1024 * 1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.server": {"level": "WARNING"}},
}

# --- submissions, evaluations, workers
MAX_SOURCE_BYTES = env_int("MAX_SOURCE_BYTES", 1024 * 1024)  # kernel source limit (UTF-8 bytes)
MAX_REQUEST_BYTES = env_int("MAX_REQUEST_BYTES", MAX_SOURCE_BYTES + 256 * 1024)  # whole request body
# Per-user evaluation budget, uploads and model-run turns together (portal/submissions/quotas.py).
# SUBMISSIONS_PER_HOUR is the variable's former name, still read.
EVALUATIONS_PER_HOUR = env_int("EVALUATIONS_PER_HOUR", env_int("SUBMISSIONS_PER_HOUR", 30))  # started, per user
MAX_ACTIVE_EVALUATIONS = env_int("MAX_ACTIVE_EVALUATIONS", 4)  # queued or running, per user, any source
# Evidence files stored per evaluation and per user in any 24 hours (portal/submissions/artifact_caps.py); the
# submission's own output is kept cut to ARTIFACT_SUBMISSION_LOG_BYTES a file. Files over a cap are not stored
# and the evaluation page says which and why.
ARTIFACT_BYTES_PER_EVALUATION = env_int("ARTIFACT_BYTES_PER_EVALUATION", 32 * 1024 * 1024)
ARTIFACT_BYTES_PER_USER_PER_DAY = env_int("ARTIFACT_BYTES_PER_USER_PER_DAY", 512 * 1024 * 1024)
ARTIFACT_SUBMISSION_LOG_BYTES = env_int("ARTIFACT_SUBMISSION_LOG_BYTES", 64 * 1024)
# Evidence bundles (zip) downloaded without signing in, per client address and per network, in an hour
# (portal/leaderboard/evidence/throttle.py); signed-in users are not counted.
ANONYMOUS_BUNDLES_PER_ADDRESS_PER_HOUR = env_int("ANONYMOUS_BUNDLES_PER_ADDRESS_PER_HOUR", 20)
ANONYMOUS_BUNDLES_PER_NETWORK_PER_HOUR = env_int("ANONYMOUS_BUNDLES_PER_NETWORK_PER_HOUR", 60)
EVALUATION_MAX_ATTEMPTS = env_int(
    "EVALUATION_MAX_ATTEMPTS", 3
)  # infrastructure retries, never for a kernel's own failure
EVALUATION_TIMEOUT = env_int("EVALUATION_TIMEOUT", 1800)  # seconds for one whole evaluator run
EVALUATION_STALE_SECONDS = env_int("EVALUATION_STALE_SECONDS", 120)  # no heartbeat for this long: the worker is gone
RECONCILE_INTERVAL = env_int("RECONCILE_INTERVAL", 60)
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 15)
# Stages the evaluator runs on this host: "all", or e.g. "policy,compile,sass" on machines without a GPU.
EVALUATOR_STAGES = env_str("EVALUATOR_STAGES", "all")
EVALUATOR_PYTHON = env_str("EVALUATOR_PYTHON", "")  # interpreter for `python -m evaluator` (default: this one)
# Successful compiles kept by source+flags hash (evaluator/build/compile_cache.py): the ranked re-evaluation of a kernel
# reuses the public evaluation's library instead of running nvcc again. Empty: off.
EVALUATOR_COMPILE_CACHE = env_str("EVALUATOR_COMPILE_CACHE", str(DATA_DIR / "compile-cache"))
PLAUSIBLE_SPEEDUP_MAX = float(env_str("PLAUSIBLE_SPEEDUP_MAX", "3.0"))
RANKED_CHECK = env_bool("RANKED_CHECK", True)  # a passing kernel is evaluated again with a secret seed before it ranks

# --- leaderboards
LEADERBOARD_CACHE_SECONDS = env_int("LEADERBOARD_CACHE_SECONDS", 300)  # backstop for writes that send no signal
REFERENCE_VERDICTS_DIR = Path(env_str("REFERENCE_VERDICTS_DIR", str(BASE_DIR / "docs" / "verdicts")))

# --- model-endpoint runs (the agent loop)
# Fernet key(s) for endpoint API keys at rest: urlsafe base64 of 32 bytes; comma-separated for rotation (the first
# encrypts). Required when DEBUG is off; with DEBUG on and none set, a random key kept in the data folder
# (dev-agent-fernet-key, mode 600). Never derived from SECRET_KEY.
AGENT_FERNET_KEY = env_str("AGENT_FERNET_KEY", "")
# Hosts and CIDRs admitted although private/loopback (local vLLM/SGLang servers), e.g. "10.1.2.3,gpu-box.internal".
AGENT_ENDPOINT_ALLOWLIST = env_list("AGENT_ENDPOINT_ALLOWLIST", [])
AGENT_MAX_ACTIVE_RUNS = env_int("AGENT_MAX_ACTIVE_RUNS", 2)  # queued or running, per user
AGENT_RUNS_PER_DAY = env_int("AGENT_RUNS_PER_DAY", 10)  # per user
AGENT_MAX_TASKS = env_int("AGENT_MAX_TASKS", 32)  # per run
AGENT_MAX_TURNS = env_int("AGENT_MAX_TURNS", 16)
AGENT_MAX_TRAJECTORIES = env_int("AGENT_MAX_TRAJECTORIES", 8)  # per task
# Evaluations one run may start over its whole life (checked before each turn). A run that cannot give each
# trajectory one evaluation is refused when created; one that runs out stops its trajectories with the reason.
AGENT_RUN_EVALUATION_BUDGET = env_int("AGENT_RUN_EVALUATION_BUDGET", 128)
# Model steps of one user queued or calling at once; the rest wait in the database and join the back of the
# queue as these end, so one user's runs cannot fill the `agent` queue ahead of everyone else's.
AGENT_MAX_CALLS_PER_USER = env_int("AGENT_MAX_CALLS_PER_USER", 4)
# Caps on model calls, whatever a run asks for: one HTTP request, retries, and the whole step (every attempt and
# wait). Cancelling a run ends a call in flight within AGENT_CANCEL_POLL_S.
AGENT_REQUEST_TIMEOUT_MAX_S = float(env_str("AGENT_REQUEST_TIMEOUT_MAX_S", "600"))
AGENT_MAX_RETRIES_MAX = env_int("AGENT_MAX_RETRIES_MAX", 3)
AGENT_CALL_WALL_MAX_S = float(env_str("AGENT_CALL_WALL_MAX_S", "900"))
AGENT_CANCEL_POLL_S = float(env_str("AGENT_CANCEL_POLL_S", "1.0"))
AGENT_RETRY_BACKOFF_S = float(env_str("AGENT_RETRY_BACKOFF_S", "2.0"))  # first wait after a 429/5xx/timeout
AGENT_RETRY_BACKOFF_CAP_S = float(env_str("AGENT_RETRY_BACKOFF_CAP_S", "60.0"))
AGENT_STEP_MAX_ATTEMPTS = env_int("AGENT_STEP_MAX_ATTEMPTS", 3)  # model-call step restarts after worker deaths
AGENT_JOB_STALE_SECONDS = env_int("AGENT_JOB_STALE_SECONDS", 300)  # a started job without heartbeat this long is dead

# --- Fixit repair datasets (docs/fixit.md)
FIXIT_DIR = Path(env_str("FIXIT_DIR", str(DATA_DIR / "fixit")))  # one folder per dataset version, never rewritten
FIXIT_DATASETS_PER_DAY = env_int("FIXIT_DATASETS_PER_DAY", 10)  # per user (staff and the command excepted)
FIXIT_REPAIR_MAX_SOURCES = env_int("FIXIT_REPAIR_MAX_SOURCES", 64)  # failing turns one repair run may take
# Written into every manifest and dataset card unless the creator names one (a Hugging Face licence id).
FIXIT_DEFAULT_LICENCE = env_str("FIXIT_DEFAULT_LICENCE", "other")
