"""Settings for Curfew, read from the environment with safe defaults.

The defaults serve one person on SQLite with the in-memory channel layer, so a
fresh machine needs no services. ``DATABASE_URL`` and ``REDIS_URL`` turn the
same code into a multi-process deployment.

Two modules use these: ``curfew_site.settings`` (served: ``make run``,
``bin/serve``, the served test apps; it insists on a secret key) and
``curfew_site.settings_test`` (the test client; explicit overrides, no env).
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
import django_stubs_ext
from curfew_client.openai_shapes import UPSTREAM_BUDGET_KEYS
from django.core.exceptions import ImproperlyConfigured

from curfew_core.store.redis_health import async_options
from curfew_site import env, redaction
from curfew_site.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_networks,
    env_rate,
    env_str,
)

# Lets admin classes and querysets be subscripted for the type checker.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

env.section("Debug, secret key and HTTPS")
DEBUG = env_bool(
    "CURFEW_DEBUG",
    default=False,
    help="Django's debug mode: a built-in key, plain HTTP, static files served in place; "
    "never in production",
    shown="off (`make run`: on)",
)
#: Empty outside debug when unset: ``curfew_site.settings`` refuses to start then.
SECRET_KEY = env_str(
    "SECRET_KEY",
    help="Django's secret key; `make run` makes one and keeps it in `.local/secret_key`",
    shown="required outside debug",
)
if not SECRET_KEY and DEBUG:
    SECRET_KEY = "insecure-dev-only-key-for-curfew-debug-mode-never-in-production"  # noqa: S105 - debug only

# Behind TLS (the production default) cookies are secure and HTTP redirects to
# HTTPS; health checks stay reachable over plain HTTP for load balancers.
HTTPS = env_bool(
    "CURFEW_HTTPS",
    default=not DEBUG,
    help="HTTPS redirect, HSTS and secure cookies (`/healthz` and `/readyz` stay on plain HTTP)",
    shown="on outside debug",
)
SECURE_SSL_REDIRECT = HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int(
    "CURFEW_HSTS_SECONDS",
    31_536_000 if HTTPS else 0,
    help="seconds browsers are told to insist on HTTPS (`Strict-Transport-Security`)",
    shown="1 year with HTTPS, else 0",
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
#: Behind a TLS-terminating balancer: trust its X-Forwarded-Proto, and take the
#: client's address from X-Forwarded-For, but only on connections from the
#: balancers named in CURFEW_TRUSTED_PROXIES. Anyone else's X-Forwarded-For is
#: their own words: believed, it would let one client pose as many and escape
#: every address throttle (issue 23). uvicorn's own handling is off in
#: ``make run`` and ``bin/serve`` (``--no-proxy-headers``): it trusts loopback
#: by default, which a tunnel on the same machine would turn into "everyone".
CURFEW_BEHIND_PROXY = env_bool(
    "CURFEW_BEHIND_PROXY",
    default=False,
    help="behind a TLS-terminating balancer: trust its `X-Forwarded-Proto`, and take the "
    "client's address from `X-Forwarded-For` on connections from `CURFEW_TRUSTED_PROXIES`",
)
CURFEW_TRUSTED_PROXIES = env_networks(
    "CURFEW_TRUSTED_PROXIES",
    help="the balancers' addresses or networks (`10.0.0.5,10.1.0.0/16`) whose "
    "`X-Forwarded-For` is believed, with `CURFEW_BEHIND_PROXY`; needed then",
)
if CURFEW_BEHIND_PROXY:
    if not CURFEW_TRUSTED_PROXIES:
        # Loud, not a guess: trusting every peer lets anyone pick their own
        # address; trusting none counts every client as the balancer.
        raise ImproperlyConfigured(
            "CURFEW_BEHIND_PROXY=1 needs CURFEW_TRUSTED_PROXIES: the addresses or "
            "networks of the balancers that connect to Curfew"
        )
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

env.section("Host names and origins")
ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS",
    ["127.0.0.1", "localhost", "[::1]"],
    help="the host names the site answers to (Django's `Host` check)",
)
CSRF_TRUSTED_ORIGINS = env_list(
    "CSRF_TRUSTED_ORIGINS",
    [],
    help="origins (`https://host`) trusted for forms and session sockets besides the site's own",
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles and whitenoise: its ``runserver`` (the whole product on
    # uvicorn, curfew_core/management/commands/runserver.py) is the one Django finds.
    "curfew_core",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "curfew_core.web.static_files.AsgiWhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A cache or database outage in a view: 503 in the door's shape (edge/outage.py).
    "curfew_core.edge.outage.OutageMiddleware",
    "curfew_core.web.csp.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "curfew_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "curfew_core.web.schedule.pretend.pretend_context",
            ],
            "libraries": {"curfew": "curfew_core.web.templatetags"},
        },
    },
]
# Form widgets render through Django's Jinja2 renderer and its own copies of the
# widget templates: the same markup (tests/web/test_form_renderer.py), and the
# Schedule page's 63 inputs and 254 options in about half the time
# (bench/page_render.py, docs/subsystems/layout.md). The pages stay Django templates.
FORM_RENDERER = "django.forms.renderers.Jinja2"

ASGI_APPLICATION = "curfew_site.asgi.application"
WSGI_APPLICATION = None

env.section("Database and Redis")
DATABASES = {
    "default": dj_database_url.parse(
        env_str(
            "DATABASE_URL",
            f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
            help="any `dj-database-url` URL; SQLite and PostgreSQL are supported",
            shown="`db.sqlite3` in the checkout (SQLite)",
        ),
        conn_max_age=env_int(
            "CONN_MAX_AGE",
            0,
            help="seconds a database connection is kept for reuse (0: one per request; on "
            "PostgreSQL the pool, `CURFEW_DATABASE_POOL`, lends one instead)",
        ),
    )
}
#: PostgreSQL connections each process keeps open in a pool (Django's own,
#: psycopg 3's ``psycopg_pool``), lent to a request's thread while it reads: a
#: cold verdict then costs its one query, not a new connection (a server
#: process started for it, its set-up, and the query: three transactions and
#: most of its time, issue 40). 0: no pool, ``CONN_MAX_AGE`` decides.
DATABASE_POOL_SIZE = env_int(
    "CURFEW_DATABASE_POOL",
    40,
    help="PostgreSQL connections a process keeps in its pool (0: none; then `CONN_MAX_AGE` "
    "decides)",
)
#: How long a request's thread waits for one of the pool's connections when
#: every one is lent, or PostgreSQL refuses new ones, before it fails as a
#: stalled database does (a 503 in the door's shape).
DATABASE_POOL_WAIT = env_float(
    "CURFEW_DATABASE_POOL_WAIT",
    5.0,
    help="seconds a request waits for a connection of the PostgreSQL pool when none is free "
    "(PostgreSQL away: then its 503)",
)
#: The cold path's query (a token, its user's rows and their team's: one
#: join of seven tables) prepared on each PostgreSQL connection the first
#: time it runs there, as psycopg can: planning it took PostgreSQL about 2 ms
#: a cold verdict, running it 0.1 ms (issue 40, ``selectors.prepared``). Off
#: behind a pooler in transaction mode that does not keep prepared statements
#: (PgBouncer before 1.21, or without ``max_prepared_statements``).
DATABASE_PREPARED = env_bool(
    "CURFEW_DATABASE_PREPARED",
    True,
    help="prepare the cold path's query on each PostgreSQL connection (off behind a "
    "pooler in transaction mode that keeps no prepared statements)",
)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A PostgreSQL that accepts and never answers (frozen, a half-open path)
    # is an error within seconds, not a wait forever: libpq has no bound of
    # its own, and every warm verdict needing a re-read hung (issue 41).
    # ``?connect_timeout=N`` in DATABASE_URL sets another.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
    # 0: a statement bound on the server is prepared on its first run; only
    # ``selectors.prepared``'s cursors bind there (Django's bind in the client,
    # which psycopg never prepares). ``None``: never (Django's default).
    DATABASES["default"]["OPTIONS"].setdefault(
        "prepare_threshold", 0 if DATABASE_PREPARED else None
    )
    if DATABASE_POOL_SIZE > 0 and not DATABASES["default"]["CONN_MAX_AGE"]:
        DATABASES["default"]["OPTIONS"]["pool"] = {
            # Opened on first use, grown to ``max_size`` by demand (the edge's
            # 32 cold-work threads, the ledger's flusher, the capsules' reads),
            # shrunk back after 10 idle minutes.
            "min_size": min(2, DATABASE_POOL_SIZE),
            "max_size": DATABASE_POOL_SIZE,
            # A thread that finds every connection lent waits this long, then
            # fails as a stalled database does (a 503 in the door's shape).
            # /readyz waits less (``health.views.PROBE_SECONDS``): with
            # PostgreSQL refusing, the pool has none to lend at all.
            "timeout": DATABASE_POOL_WAIT,
        }
        # Lent only after a round trip proved it alive: a connection PostgreSQL
        # closed (a restart, an outage) is replaced, never handed to a request.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
        # After a failed attempt the pool tries again in 1, 2, 4, 8, 16 s (a
        # class attribute, no pool option): after a 10 s outage it was still
        # waiting with PostgreSQL back, and every read was a 503 meanwhile
        # (tests/production/test_postgres_gone_under_load.py). Every second.
        from psycopg_pool.base import AttemptWithBackoff

        AttemptWithBackoff.DELAY_BACKOFF = 1.0
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Take SQLite's write lock when a transaction begins, so concurrent saves
    # queue and meet the stale-version check (409) instead of "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {})["transaction_mode"] = "IMMEDIATE"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str(
    "REDIS_URL",
    help="Redis for the cache, the throttle's counts and the channel layer: required for more "
    "than one process",
)
#: Every Redis call has a deadline: a stalled or black-holed Redis must turn into
#: a prompt 503 (the API's outage shape), never a request that hangs. A verdict's
#: cache reads take well under a millisecond, so seconds are generous.
REDIS_TIMEOUT = env_float(
    "CURFEW_REDIS_TIMEOUT",
    2.0,
    help="seconds before a Redis call that gets no answer fails (a stalled Redis is a prompt 503)",
)
#: Namespaces keys and channels, so deployments (or test servers) can share one Redis.
REDIS_PREFIX = env_str(
    "CURFEW_REDIS_PREFIX",
    "curfew",
    help="namespace of keys and channels, for deployments sharing one Redis",
)
#: Read whether or not Redis is configured, so the reference lists it.
REDIS_MAX_CONNECTIONS = env_int(
    "CURFEW_REDIS_MAX_CONNECTIONS",
    50,
    help="Redis connections of the cache's pool per process (a burst waits for one)",
)
if REDIS_URL:
    CACHES = {
        "default": {
            # One client and pool per process (the stock backend opens a new
            # connection per request under ASGI); blocking, so a burst waits
            # for a connection instead of failing with "too many connections".
            "BACKEND": "curfew_core.store.redis_cache.SharedRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": REDIS_PREFIX,
            "OPTIONS": {
                "pool_class": "redis.BlockingConnectionPool",
                "max_connections": REDIS_MAX_CONNECTIONS,
                "timeout": 10,
                "socket_timeout": REDIS_TIMEOUT,
                "socket_connect_timeout": REDIS_TIMEOUT,
            },
        }
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py's default 5 s read timeout equals channels_redis' 5 s blocking
            # receive, so every idle socket's consumer died at 5 s: give reads room.
            "CONFIG": {
                # Connections that live through a Redis restart (as the cache's).
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15, **async_options()}],
                "prefix": f"{REDIS_PREFIX}:asgi",
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "settings-page"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

env.section("Static files and logs")
STATIC_URL = "static/"
STATIC_ROOT = Path(
    env_str(
        "CURFEW_STATIC_ROOT",
        str(BASE_DIR / "staticfiles"),
        help="where `collectstatic` (`bin/serve prepare`) puts the static files served",
        shown="`staticfiles/` in the checkout",
    )
)
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        # Hashed, compressed names in production (bin/serve runs collectstatic);
        # plain names where none has run (debug, the test client).
        "BACKEND": "curfew_core.web.storage.ManifestStaticFilesStorage"
        if env_bool(
            "CURFEW_MANIFEST_STATIC",
            default=not DEBUG,
            help="serve collected files under hashed, compressed names (`bin/serve` sets it)",
            shown="on outside debug",
        )
        else "django.contrib.staticfiles.storage.StaticFilesStorage",
    },
}

# Debug serving (``make run``) finds files in place; production serves collectstatic's output.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# No secret in a log, from any logger or server (uvicorn's included): every
# record is cleaned as it is made (curfew_site/redaction.py).
redaction.install()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "curfew": {
            "handlers": ["console"],
            "level": env_str(
                "CURFEW_LOG_LEVEL",
                "INFO",
                help="level of the `curfew` loggers (`DEBUG`, `INFO`, `WARNING`, ...)",
            ),
        },
        # Outside debug Django logs nothing to the console: a 500 needs its traceback.
        "django": {"handlers": ["console"], "level": "INFO" if DEBUG else "ERROR"},
    },
}

# -- Curfew ------------------------------------------------------------------
#: A gateway may cache a verdict until its ``valid_until``, but saves and
#: overrides are not predictable: the API advises re-asking at least this often.
env.section("Verdicts and the cache")
CURFEW_VERDICT_MAX_AGE = env_int(
    "CURFEW_VERDICT_MAX_AGE",
    60,
    help="seconds a gateway may cache a verdict at most (`max_age`)",
)
#: Longest a cached schedule, override or token check is trusted without
#: re-reading the database (see curfew_core/store/cache_policy.py). With Redis,
#: every committed write is pushed to every process (the writer's refresh and
#: one ``PUBLISH``; the model signals cover the admin, a shell, a command), so
#: this only bounds a push that was lost (Redis refused the refresh, the process
#: died between commit and refresh) and a write around the ORM's saves (a bulk
#: ``update()``, SQL): five gateway lifetimes (``CURFEW_VERDICT_MAX_AGE``), so a
#: user asked once a minute stays warm. Without Redis nothing is pushed across
#: processes (a second worker, ``manage.py`` beside the server): 5 s.
CACHE_FRESH_PUSHED = 5 * CURFEW_VERDICT_MAX_AGE
CACHE_FRESH_POLLED = 5
CURFEW_CACHE_FRESH_SECONDS = env_int(
    "CURFEW_CACHE_FRESH_SECONDS",
    CACHE_FRESH_PUSHED if REDIS_URL else CACHE_FRESH_POLLED,
    help="longest a cached schedule, override or token check is trusted without re-reading "
    "the database (a lost push, a write around the ORM's saves)",
    shown="with `REDIS_URL`: 5 × `CURFEW_VERDICT_MAX_AGE` (300); without: 5",
)
#: How long a cached schedule is kept: past the freshness bound it only answers
#: while the database cannot be read (warm verdicts go on through an outage).
CURFEW_SCHEDULE_CACHE_SECONDS = env_int(
    "CURFEW_SCHEDULE_CACHE_SECONDS",
    3600,
    help="how long a cached schedule is kept to answer while the database cannot be read",
)

env.section("The proxy's upstreams")
#: The OpenAI-compatible provider the proxy forwards to (operator-set; the key
#: never reaches clients or logs).
CURFEW_UPSTREAM_BASE_URL = env_str(
    "CURFEW_UPSTREAM_BASE_URL",
    "https://api.deepseek.com/v1",
    help="the OpenAI-compatible provider behind the proxy's `/v1/` doors",
)
CURFEW_UPSTREAM_API_KEY = env_str(
    "CURFEW_UPSTREAM_API_KEY",
    help="the key the proxy sends that provider; never reaches clients or logs",
)
CURFEW_UPSTREAM_TIMEOUT = env_int(
    "CURFEW_UPSTREAM_TIMEOUT",
    600,
    help="seconds an upstream may go silent mid-answer (connecting is bounded shorter); also "
    "the longest a client may take nothing of a streamed answer, and the whole read of an "
    "upstream's error body",
)
#: The Anthropic-compatible provider behind ``/v1/messages`` (DeepSeek's by
#: default), as Anthropic's SDK takes its base URL: without ``/v1``, which the
#: proxy adds (as the SDK does). Its key is sent as ``x-api-key`` and, like the
#: other, never shown.
CURFEW_ANTHROPIC_UPSTREAM_BASE_URL = env_str(
    "CURFEW_ANTHROPIC_UPSTREAM_BASE_URL",
    "https://api.deepseek.com/anthropic",
    help="the Anthropic-compatible provider behind `/v1/messages`, without `/v1` (as its SDK "
    "takes it)",
)
CURFEW_ANTHROPIC_UPSTREAM_API_KEY = env_str(
    "CURFEW_ANTHROPIC_UPSTREAM_API_KEY",
    help="the key sent to that provider as `x-api-key`; never shown",
)
#: The Gemini API behind ``/v1beta/models/{model}:generateContent`` (issue 43),
#: as the google-genai SDK takes its base URL: without ``/v1beta``, which the
#: proxy adds. Its key is sent as ``x-goog-api-key`` and, like the others,
#: never shown. Client input never shapes where a request goes: the model id
#: is one checked path segment under this base.
CURFEW_GEMINI_UPSTREAM_BASE_URL = env_str(
    "CURFEW_GEMINI_UPSTREAM_BASE_URL",
    "https://generativelanguage.googleapis.com",
    help="the Gemini API behind `/v1beta/models/{model}:generateContent`, without `/v1beta` "
    "(as its SDK takes it)",
)
CURFEW_GEMINI_UPSTREAM_API_KEY = env_str(
    "CURFEW_GEMINI_UPSTREAM_API_KEY",
    help="the key sent to that provider as `x-goog-api-key`; never shown",
)
#: Upstream calls one token may have open at once in one process (beyond: 429),
#: so no single client can hold the whole connection pool. Through a team key,
#: each member the calls name has a share of their own.
CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN = env_int(
    "CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN",
    16,
    help="upstream calls one token may have open at once, per process (beyond: 429); "
    "through a team key, each member's own",
)
#: Upstream connections per process, and how long a call waits for a free one
#: before answering 503 (short: a full pool is an overload, not a slow network).
CURFEW_UPSTREAM_MAX_CONNECTIONS = env_int(
    "CURFEW_UPSTREAM_MAX_CONNECTIONS",
    200,
    help="upstream connections per process",
)
CURFEW_UPSTREAM_POOL_TIMEOUT = env_int(
    "CURFEW_UPSTREAM_POOL_TIMEOUT",
    3,
    help="seconds a call waits for a free upstream connection before answering 503",
)
#: The most of one upstream answer relayed (issue 41): an upstream that sends
#: gigabytes, or never stops, is hung up on there. Before the head is sent
#: (a declared length past it) the client gets a 502 in the door's shape;
#: mid-stream an event stream ends with the door's error event and a JSON
#: body is broken off. An error body is read whole first, so at most 1 MiB of
#: it is. Embeddings of a large batch are the biggest honest answers (about
#: 125 MB for 2048 inputs of 3072 floats as JSON).
CURFEW_UPSTREAM_MAX_ANSWER_BYTES = env_int(
    "CURFEW_UPSTREAM_MAX_ANSWER_BYTES",
    256 * 1024 * 1024,
    shown="268435456 (256 MiB)",
    help="bytes of one upstream answer the proxy relays; past it the upstream is hung up on "
    "and the client gets a 502 (or, mid-stream, the door's error event)",
)
#: The budget name(s) a winding clamp is sent under: ``max_tokens``,
#: ``max_completion_tokens`` or ``both``. Unset: the names the client sent
#: (``max_tokens`` when it sent neither). Many OpenAI-compatible providers ignore
#: ``max_completion_tokens`` (the only name langchain-openai sends), which would
#: make the clamp a silent no-op; see openai_shapes.apply_verdict.
CURFEW_UPSTREAM_BUDGET_KEY = env_choice(
    "CURFEW_UPSTREAM_BUDGET_KEY",
    UPSTREAM_BUDGET_KEYS,
    help="the budget name(s) a winding clamp is sent under; unset: the client's own names "
    "(`max_tokens` when it sent neither)",
)

#: Whether a caller may bring its own provider credential (a subscription
#: login such as Claude Pro/Max or ChatGPT, or its own key): with the Curfew
#: token in ``X-Curfew-Token``, the proxy then sends the caller's
#: ``Authorization`` / ``x-api-key`` upstream instead of the operator's key
#: (``curfew_core.edge.http_headers.caller_credential``). Off: such a request
#: is a 403 in the door's shape, never silently sent with the operator's key.
CURFEW_PROXY_CALLER_CREDENTIALS = env_bool(
    "CURFEW_PROXY_CALLER_CREDENTIALS",
    default=False,
    help="let callers bring their own provider credential (a Claude or ChatGPT subscription "
    "login, or their own key) with the Curfew token in `X-Curfew-Token`: the proxy sends "
    "theirs upstream instead of the operator's key, and never logs or stores it",
)

env.section("Throttles")
#: Throttles (curfew_core/throttle.py), each a rate such as ``10/15minutes`` or
#: ``off``. Counts are shared through Redis when REDIS_URL is set, per process
#: otherwise. CURFEW_THROTTLE=0 turns every one off (benchmarks).
CURFEW_THROTTLE = env_bool(
    "CURFEW_THROTTLE",
    default=True,
    help="`0` turns every throttle off (each limit below also takes `off`)",
)

#: Failed sign-ins per account name from one client address; then that account
#: is locked for the window *from that address* only. A lock per account alone
#: let anyone who knew a name keep its owner out from anywhere (issue 23).
CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS = env_rate(
    "CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS",
    "10/15minutes",
    help="failed sign-ins for one account from one address before that account is locked "
    "out, from that address only, for the window",
)
if "CURFEW_SIGNIN_FAILURES_PER_ACCOUNT" in os.environ:
    # Renamed with a new meaning: an old setting must not be ignored in silence.
    raise ImproperlyConfigured(
        "CURFEW_SIGNIN_FAILURES_PER_ACCOUNT is gone: failed sign-ins are now counted per "
        "account and address (CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS), so that no one "
        "can lock an account's owner out from elsewhere"
    )
#: Failed sign-ins per client address, whatever names it tries.
CURFEW_SIGNIN_FAILURES_PER_ADDRESS = env_rate(
    "CURFEW_SIGNIN_FAILURES_PER_ADDRESS",
    "50/15minutes",
    help="failed sign-ins before the client address is locked out, whatever names it tries",
)
#: Sign-up attempts per client address (with CURFEW_SIGNUP): each may learn
#: whether one name is taken, so this bounds how fast accounts can be listed,
#: and how fast made.
CURFEW_SIGNUPS_PER_ADDRESS = env_rate(
    "CURFEW_SIGNUPS_PER_ADDRESS",
    "10/hour",
    help="sign-up attempts (taken names and new accounts alike) per client address",
)
#: Password reset requests (with CURFEW_PASSWORD_RESET), per client address and
#: per address typed: each may send a mail, so these bound how fast one
#: address can send them, and how many one inbox can be sent from anywhere.
#: Counted whether or not the address has an account (the answer tells nothing).
CURFEW_RESETS_PER_ADDRESS = env_rate(
    "CURFEW_RESETS_PER_ADDRESS",
    "10/hour",
    help="password reset requests per client address",
)
CURFEW_RESETS_PER_EMAIL = env_rate(
    "CURFEW_RESETS_PER_EMAIL",
    "3/hour",
    help="password reset requests per email address typed, from any client address",
)
#: Open capsule sockets from one client address, per server process (each
#: worker counts its own): embed tokens are public by design, so one address
#: could hold thousands. Past it the socket is closed 4429 and the capsule
#: retries with its backoff. 0: no limit.
CURFEW_CAPSULE_SOCKETS_PER_ADDRESS = env_int(
    "CURFEW_CAPSULE_SOCKETS_PER_ADDRESS",
    256,
    help="open capsule sockets from one client address, per server process (0: no limit)",
)
#: Unknown or revoked bearer/embed tokens per client address; over it, every
#: token from that address is answered 429 until the window has room again.
CURFEW_TOKEN_FAILURES_PER_ADDRESS = env_rate(
    "CURFEW_TOKEN_FAILURES_PER_ADDRESS",
    "60/minute",
    help="unknown or revoked tokens per client address before they are answered 429",
)
#: Requests per live token (all doors together); far above a gateway fleet's use.
#: Through a team key, each member the calls name has a rate of their own.
CURFEW_TOKEN_RATE = env_rate(
    "CURFEW_TOKEN_RATE",
    "6000/minute",
    help="requests per live token, all doors together; through a team key, each member's own",
)
CURFEW_THROTTLE_REDIS_CONNECTIONS = env_int(
    "CURFEW_THROTTLE_REDIS_CONNECTIONS",
    50,
    help="Redis connections of the throttle's own pool per process",
)

# -- Accounts ----------------------------------------------------------------
#: Sign-up at ``/account/signup/``. Off by default: operators invite users (the
#: admin or ``manage.py curfew token --create-user``); off, the page is a 404 and
#: the sign-in page offers no link to it.
env.section("Accounts and email")
CURFEW_SIGNUP = env_bool(
    "CURFEW_SIGNUP",
    default=False,
    help="open sign-up at `/account/signup/`; off it is a 404 (operators invite users)",
)
#: Outgoing email (Django's own names). With no ``EMAIL_HOST`` nothing is sent
#: and password reset by email is off (its pages are 404s).
EMAIL_HOST = env_str(
    "EMAIL_HOST",
    help="outgoing mail server; set, password reset by email is on (unset, its pages are 404s)",
)
EMAIL_PORT = env_int("EMAIL_PORT", 587, help="the mail server's port")
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", help="user name at the mail server")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", help="password at the mail server")
EMAIL_USE_TLS = env_bool(
    "EMAIL_USE_TLS", default=True, help="STARTTLS to the mail server (not with `EMAIL_USE_SSL`)"
)
EMAIL_USE_SSL = env_bool(
    "EMAIL_USE_SSL",
    default=False,
    help="implicit TLS to the mail server (not with `EMAIL_USE_TLS`)",
)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be on (pick one)")
#: Seconds before a stalled mail server fails the send (never a hung request).
EMAIL_TIMEOUT = env_int(
    "EMAIL_TIMEOUT", 10, help="seconds before a stalled mail server fails the send"
)
DEFAULT_FROM_EMAIL = env_str(
    "DEFAULT_FROM_EMAIL", "curfew@localhost", help="the sender of the mail Curfew sends"
)
#: Password reset by email: on exactly when an email host is configured.
CURFEW_PASSWORD_RESET = bool(EMAIL_HOST)

# -- Decision ledger (issue 14) ------------------------------------------------
#: Record the decisions the doors act on (``0``: keep no ledger; the
#: benchmarks' control).
env.section("Decision ledger")
CURFEW_LEDGER = env_bool(
    "CURFEW_LEDGER",
    default=True,
    help="`0` keeps no decision ledger (nothing recorded, Activity shows no decisions)",
)
#: Raw decisions older than this many days go: hourly, pruned by the servers
#: (``services.ledger_prune``), or at once by ``manage.py curfew prune``; the
#: hourly aggregates are kept indefinitely.
CURFEW_LEDGER_RETENTION_DAYS = env_int(
    "CURFEW_LEDGER_RETENTION_DAYS",
    30,
    help="days raw decisions are kept (the servers prune hourly; `manage.py curfew prune` "
    "at once); hourly totals are kept",
)
#: How often each process writes its buffered decisions (seconds): what a
#: crash can lose. 0: only an explicit flush writes (the tests).
CURFEW_LEDGER_FLUSH_SECONDS = env_float(
    "CURFEW_LEDGER_FLUSH_SECONDS",
    1.0,
    help="how often each process writes its buffered decisions: the most a crash can lose",
)
