"""Read a rendered form the way a browser would submit it (no JS).

Tests post what the page actually holds, so a field the template forgets or
misnames breaks a round trip instead of passing unnoticed.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any


class _FormParser(HTMLParser):
    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.depth = 0
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._select_value: str | None = None
        self._select_first: str | None = None
        self._option_value: str | None = None
        self._textarea: str | None = None
        self._text: list[str] = []
        self._in_template = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if tag == "form" and a.get("id") == self.form_id:
            self.inside = True
            return
        if not self.inside:
            return
        if tag == "template":
            self._in_template += 1
        if self._in_template:
            return
        name = a.get("name")
        if tag == "input" and name:
            kind = a.get("type", "text")
            if kind in ("submit", "button", "reset"):
                return
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.fields.append((name, a.get("value") or "on"))
                return
            self.fields.append((name, a.get("value", "")))
        elif tag == "select" and name:
            self._select, self._select_value, self._select_first = name, None, None
        elif tag == "option" and self._select is not None:
            value = a.get("value", "")
            if self._select_first is None:
                self._select_first = value
            if "selected" in a:
                self._select_value = value
        elif tag == "textarea" and name:
            self._textarea, self._text = name, []

    def handle_endtag(self, tag: str) -> None:
        if not self.inside:
            return
        if tag == "template":
            self._in_template -= 1
        elif tag == "form":
            self.inside = False
        elif tag == "select" and self._select is not None:
            value = self._select_value if self._select_value is not None else self._select_first
            self.fields.append((self._select, value or ""))
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            text = "".join(self._text)
            # A browser drops one leading newline of a textarea's content.
            self.fields.append((self._textarea, text[1:] if text.startswith("\n") else text))
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)


def form_fields(html: str, form_id: str) -> list[tuple[str, str]]:
    parser = _FormParser(form_id)
    parser.feed(html)
    assert parser.fields, f"no form #{form_id} with fields in the page"
    return parser.fields


def as_post(fields: list[tuple[str, str]], **replace: Any) -> dict[str, Any]:
    """Fields as a dict for the test client (repeated names become lists);
    ``replace`` sets (or with ``None`` drops) single fields."""
    data: dict[str, Any] = {}
    for name, value in fields:
        if name in data:
            existing = data[name]
            data[name] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            data[name] = value
    for name, value in replace.items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value
    return data


def set_rows(data: dict[str, Any], prefix: str, **columns: list[str]) -> dict[str, Any]:
    """Replace a formset's rows in posted ``data``: ``set_rows(data, "anchors",
    time=[...], tokens=[...])`` as a browser posts them (one box per cell,
    ``TOTAL_FORMS`` the row count)."""
    for name in [name for name in data if name.startswith(f"{prefix}-")]:
        if not name.endswith(("-INITIAL_FORMS", "-MIN_NUM_FORMS", "-MAX_NUM_FORMS")):
            del data[name]
    size = max(len(values) for values in columns.values())
    for column, values in columns.items():
        for index, value in enumerate(values):
            data[f"{prefix}-{index}-{column}"] = value
    data[f"{prefix}-TOTAL_FORMS"] = str(size)
    return data
