"""A second LiteLLM callback for the tests: writes what LiteLLM's own ledger
(the standard logging payload its spend tracking reads) records for each call,
one JSON line per call, to ``$CURFEW_TEST_LEDGER``."""

from __future__ import annotations

import json
import os
from typing import Any

from litellm.integrations.custom_logger import CustomLogger


class Ledger(CustomLogger):
    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        payload = kwargs.get("standard_logging_object") or {}
        params = kwargs.get("litellm_params") or {}
        request = params.get("proxy_server_request") or kwargs.get("proxy_server_request") or {}
        line = {
            "call_id": kwargs.get("litellm_call_id"),
            "session": (request.get("headers") or {}).get("x-curfew-session"),
            "tokens": [payload.get(key) for key in ("prompt_tokens", "completion_tokens")],
            "cost": payload.get("response_cost"),
        }
        with open(os.environ["CURFEW_TEST_LEDGER"], "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


recorder = Ledger()
