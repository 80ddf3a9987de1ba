"""The Activity page's price table as a person types it. Saved through
``services.prices.price_table_set``, which validates again and audits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curfew_core.ledger.savings import MAX_PRICE, MAX_WINDOWS

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*[-–—~]\s*(\d{1,2}):(\d{2})\s*$")


def windows_text(windows: list[list[str]]) -> str:
    return ", ".join(f"{start}-{end}" for start, end in windows)


def _plain(number: Decimal) -> str:
    return format(number.normalize(), "f")


class PriceForm(forms.Form):
    """The price table as a person types it: the discount in percent, the
    discount windows as ``10:00-01:00, 04:00-06:00`` (UTC)."""

    input_per_million = forms.DecimalField(
        label=gettext_lazy("Input price per million tokens"),
        min_value=Decimal(0),
        max_value=MAX_PRICE,
        decimal_places=6,
    )
    output_per_million = forms.DecimalField(
        label=gettext_lazy("Output price per million tokens"),
        min_value=Decimal(0),
        max_value=MAX_PRICE,
        decimal_places=6,
    )
    currency = forms.CharField(
        label=gettext_lazy("Currency"),
        # Bounded, but a wrong length gets the same plain advice as a wrong code.
        max_length=40,
        help_text=gettext_lazy("A three-letter code, like USD or CNY."),
    )
    discount_windows = forms.CharField(
        label=gettext_lazy("Discount hours (UTC)"),
        required=False,
        help_text=gettext_lazy(
            "Start-end in UTC, separated by commas, like 10:00-01:00, 04:00-06:00. "
            "Empty: no discount."
        ),
    )
    discount_percent = forms.DecimalField(
        label=gettext_lazy("Discount in those hours (%)"),
        min_value=Decimal(0),
        max_value=Decimal(100),
        decimal_places=4,
    )

    def clean_currency(self) -> str:
        code = str(self.cleaned_data["currency"]).strip().upper()
        if not re.fullmatch(r"[A-Z]{3}", code):
            raise forms.ValidationError(_("Use a three-letter code, like USD or CNY."))
        return code

    def clean_discount_windows(self) -> list[list[str]]:
        text = str(self.cleaned_data.get("discount_windows") or "")
        parts = [p for p in re.split(r"[,;\n]", text) if p.strip()]
        if len(parts) > MAX_WINDOWS:
            raise forms.ValidationError(_("At most %(n)s windows.") % {"n": MAX_WINDOWS})
        windows = []
        for part in parts:
            match = _WINDOW.match(part)
            if match is None:
                raise forms.ValidationError(
                    _("“%(part)s” is not a window; write it as 22:00-06:00.")
                    % {"part": part.strip()[:40]}
                )
            h1, m1, h2, m2 = (int(g) for g in match.groups())
            if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
                raise forms.ValidationError(
                    _("“%(part)s” is not a time of day.") % {"part": part.strip()[:40]}
                )
            start, end = f"{h1:02d}:{m1:02d}", f"{h2:02d}:{m2:02d}"
            if start == end:
                raise forms.ValidationError(_("A window must end at another time than it starts."))
            windows.append([start, end])
        return windows

    def changes(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "input_per_million": _plain(data["input_per_million"]),
            "output_per_million": _plain(data["output_per_million"]),
            "currency": data["currency"],
            "discount_windows": data["discount_windows"],
            "discount_rate": _plain(data["discount_percent"] / 100),
        }


#: The service's field names -> the form's.
PRICE_FIELD_OF = {
    "input_per_million": "input_per_million",
    "output_per_million": "output_per_million",
    "currency": "currency",
    "discount_windows": "discount_windows",
    "discount_rate": "discount_percent",
}


def price_form_initial(table: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "input_per_million": table["input_per_million"],
        "output_per_million": table["output_per_million"],
        "currency": table["currency"],
        "discount_windows": windows_text(table["discount_windows"]),
        "discount_percent": _plain(Decimal(table["discount_rate"]) * 100),
    }


def flag_price_errors(form: PriceForm, errors: Mapping[str, str]) -> None:
    """The service refused what the form let through: each field it named is
    flagged (in the reader's language; the service speaks English)."""
    for key in errors:
        form.add_error(PRICE_FIELD_OF.get(key), _("This value was not accepted."))
