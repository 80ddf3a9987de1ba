"""The client's suite reaches no network but loopback.

``curfew_client.litellm_hook`` imports LiteLLM, which fetches its price map
from GitHub at import unless told to read the copy in its package: without
this a test run tried three times, several seconds each, and logged the
failures (a run with network would fetch for nothing).
"""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
