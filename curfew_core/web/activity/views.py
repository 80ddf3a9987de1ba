"""The Activity section's doors (``/activity/``): what the curfew did (the
decision ledger: chart, totals, recent decisions, export) and what changed
(the audit trail); the price table's save."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from curfew_core.ledger.savings import PriceError
from curfew_core.selectors import ledger as ledger_selectors
from curfew_core.selectors import ledger_page
from curfew_core.selectors import web as web_selectors
from curfew_core.selectors.audit import audit_recent
from curfew_core.services.prices import price_table_set
from curfew_core.web import shell
from curfew_core.web.activity import chart, export, prices, totals, words
from curfew_core.web.activity.query import PER_PAGE, LedgerQuery, parse_query

ACTIVITY = "curfew/activity.html"


@shell.login_required_page
@require_GET
def activity(request: HttpRequest) -> HttpResponse:
    """What the curfew did (the decision ledger: chart, totals, recent
    decisions, export) and what changed (the audit trail). A filter the page
    does not know is named and ignored; with htmx the ledger card alone."""
    query = parse_query(request.GET)
    status = 200
    if query.problems:
        status = shell.invalid_status(request)
    return _render_activity(request, query, status=status)


def _render_activity(
    request: HttpRequest,
    query: LedgerQuery,
    *,
    status: int = 200,
    price_form: prices.PriceForm | None = None,
) -> HttpResponse:
    user = shell.user_of(request)
    tz_name = web_selectors.saved_schedule(user).config["timezone"]
    period = ledger_page.period_of(query.days, now=timezone.now(), tz_name=tz_name)
    # The chart and the totals follow the session filter, as the list below them
    # does; not the action filter: the chart shows each action already, and the
    # money for requests not sent rests on the passed calls' usage.
    hours = ledger_page.hours(user_id=user.pk, period=period, session=query.session or None)
    table = ledger_selectors.price_table(user.pk)
    if price_form is None:
        price_form = prices.PriceForm(initial=prices.price_form_initial(table))
    # One session's requests not sent are priced as its own typical passed call,
    # or, if none of its calls passed, as the user's.
    every = ledger_page.hours(user_id=user.pk, period=period) if query.session else hours
    saved = ledger_selectors.savings_of(
        user_id=user.pk, buckets=hours.buckets, typical_of=every.buckets
    )
    # The same short walk over the period before, for "week before" beside each total.
    earlier = ledger_page.period_before(period)
    before = ledger_page.hours(user_id=user.pk, period=earlier, session=query.session or None)
    every_before = ledger_page.hours(user_id=user.pk, period=earlier) if query.session else before
    saved_before = ledger_selectors.savings_of(
        user_id=user.pk, buckets=before.buckets, typical_of=every_before.buckets
    )
    context = shell.base_context(
        request,
        "activity",
        timezone=tz_name,
        query=query,
        period=period,
        periods=ledger_page.PERIODS,
        actions=[(code, words.action_word(code)) for code in words.ACTION_ORDER],
        sessions=ledger_page.session_choices(user_id=user.pk, period=period),
        figure=chart.ledger_figure(hours.cells, period),
        series=chart.series_totals(hours.cells),
        from_decisions=hours.from_decisions,
        saved=saved,
        totals=totals.period_totals(
            hours.buckets,
            before.buckets,
            saved,
            saved_before,
            days=period.days,
            held=ledger_page.minutes_held_off(
                user_id=user.pk, period=period, session=query.session or None
            ),
            held_before=ledger_page.minutes_held_off(
                user_id=user.pk, period=earlier, session=query.session or None
            ),
            before_since=earlier.since,
            retention_days=settings.CURFEW_LEDGER_RETENTION_DAYS,
        ),
        decisions=ledger_page.recent_decisions(
            user_id=user.pk,
            period=period,
            session=query.session or None,
            action=query.action or None,
            page=query.page,
            per_page=PER_PAGE,
        ),
        prices=table,
        discount_percent=prices.price_form_initial(table)["discount_percent"],
        price_form=price_form,
        retention_days=settings.CURFEW_LEDGER_RETENTION_DAYS,
        audit=audit_recent(user, 100, tz=tz_name),
    )
    template = ACTIVITY
    if shell.is_htmx(request) and request.method == "GET":
        template = f"{ACTIVITY}#ledger"
    return shell.rendered(request, template, context, status=status)


@shell.login_required_page
@require_GET
def activity_export(request: HttpRequest) -> StreamingHttpResponse:
    """The decisions of the chosen period and filter as CSV, streamed."""
    query = parse_query(request.GET)
    user = shell.user_of(request)
    tz_name = web_selectors.saved_schedule(user).config["timezone"]
    period = ledger_page.period_of(query.days, now=timezone.now(), tz_name=tz_name)
    chunk = export.export_chunker(user_id=user.pk, period=period, query=query)
    # The first chunk is read here: a database outage now is the styled 503
    # page, not a download cut short. (One later is a cut-short download:
    # the status has been sent.)
    first = chunk(None)
    lines = (
        export.csv_lines_async(chunk, first)
        if isinstance(request, ASGIRequest)
        else export.csv_lines(chunk, first)
    )
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    name = f"curfew-decisions-{period.first_day.isoformat()}-{period.last_day.isoformat()}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["Cache-Control"] = "no-store"
    return response


@shell.login_required_page
@require_POST
def activity_prices(request: HttpRequest) -> HttpResponse:
    """Save the price table; a refused field is flagged and nothing changes."""
    user = shell.user_of(request)
    form = prices.PriceForm(request.POST)
    query = parse_query(request.GET)
    if form.is_valid():
        try:
            price_table_set(user=user, changes=form.changes(), actor=user, channel="page")
        except PriceError as exc:
            prices.flag_price_errors(form, exc.errors)
    if form.errors:
        return _render_activity(request, query, status=400, price_form=form)
    messages.success(request, _("Prices saved."))
    return HttpResponseRedirect(reverse("settings-activity") + "#prices")
