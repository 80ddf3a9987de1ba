/* Every page's script: says script is on (so script-only controls show and
   their no-script stand-ins hide). Pages work without it. */
document.documentElement.classList.add("js");

/* Pretend ends (or starts, or is stopped elsewhere) while a page is open: the
   banner, the Stop button and what pretend drew on the page must go with it,
   not wait for a reload. The truth arrives the ways every change does: the
   timer at the pretend's end (the banner carries it), the Now card's minute
   refresh (data-pretend), and the capsule's pushes on the pages that show it
   (a "curfew:state" event). When it no longer matches what the page shows,
   "curfew:pretend" makes the banner's slot fetch the page again (base.html). */
(function () {
  "use strict";
  var timer = null;
  var armedFor = null;
  var fired = false;

  function shown() {
    return document.getElementById("pretend-banner") !== null;
  }

  function refresh() {
    if (document.body) {
      document.body.dispatchEvent(new CustomEvent("curfew:pretend"));
    }
  }

  function sync(pretending) {
    if (pretending !== shown()) {
      refresh();
    }
  }

  function arm() {
    clearTimeout(timer);
    timer = null;
    var banner = document.getElementById("pretend-banner");
    var until = banner ? parseInt(banner.getAttribute("data-until-ms"), 10) : NaN;
    if (isNaN(until)) {
      armedFor = null;
      return;
    }
    // Just past the end, so the server (whose clock decides) has it over.
    var wait = until - Date.now() + 300;
    if (fired && armedFor === until) {
      // The server still showed it (this clock runs ahead of the server's):
      // ask again, not in a loop.
      wait = Math.max(wait, 5000);
    }
    armedFor = until;
    // setTimeout holds at most ~24.8 days; a longer pretend re-arms on reload.
    fired = false;
    timer = setTimeout(function () {
      fired = true;
      refresh();
    }, Math.min(Math.max(wait, 0), 0x7fffffff));
  }

  /* The banner's countdown ("14 minutes left") runs: the server says it on
     load, to the minute, rounded up (web/schedule/pretend.py, countdown_text); here it
     is said again each time the minutes left change, on the server's clock
     (its "now" when it drew the page, moved on by this clock since), in the
     server's words for the page's language. */
  var tickTimer = null;
  var tickFor = null;

  function countdownText(leftMs, words) {
    var minutes = Math.max(1, Math.ceil(leftMs / 60000));
    var hours = Math.floor(minutes / 60);
    var rest = minutes % 60;
    function say(forms, n) {
      return forms[n === 1 ? 0 : 1].replace("%(num)d", String(n));
    }
    var parts = [];
    if (hours) parts.push(say(words.hour, hours));
    if (rest || !hours) parts.push(say(words.minute, rest));
    return parts.join(words.sep);
  }

  function tick() {
    clearTimeout(tickTimer);
    tickTimer = null;
    var span = document.getElementById("pretend-countdown");
    if (!span) {
      tickFor = null;
      return;
    }
    var until = parseInt(span.getAttribute("data-until-ms"), 10);
    var words;
    try {
      words = JSON.parse(span.getAttribute("data-words"));
    } catch (e) {
      return;
    }
    if (tickFor !== span) {
      // A new banner: its server "now" against this clock, once.
      tickFor = span;
      span.skew = parseInt(span.getAttribute("data-now-ms"), 10) - Date.now();
      if (isNaN(span.skew)) span.skew = 0;
    }
    if (isNaN(until) || !words) return;
    var left = until - (Date.now() + span.skew);
    if (left <= 0) return; // The timer at the end (arm) takes the banner away.
    var text = countdownText(left, words);
    if (span.textContent !== text) span.textContent = text;
    // Again when the minutes left next change (just past it).
    var next = left % 60000 || 60000;
    tickTimer = setTimeout(tick, Math.min(next + 50, 60050));
  }

  document.addEventListener("DOMContentLoaded", arm);
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:afterSettle", function () {
    if (document.getElementById("pretend-countdown") !== tickFor) tick();
    // A swap may have brought a new banner (re-arm) or a fresh Now card,
    // which says whether the server still has a pretend.
    var banner = document.getElementById("pretend-banner");
    var until = banner ? parseInt(banner.getAttribute("data-until-ms"), 10) : null;
    if (until !== armedFor || fired) {
      arm();
    }
    var now = document.getElementById("now");
    if (now && now.hasAttribute("data-pretend")) {
      sync(now.getAttribute("data-pretend") === "on");
    }
  });
  document.addEventListener("curfew:state", function (event) {
    if (event.detail && typeof event.detail.pretending === "boolean") {
      sync(event.detail.pretending);
    }
  });
})();

/* The heads-up: "Your AI gets sleepy in 10 minutes", before the AI gets
   sleepy, goes off for peak hours or falls asleep. The facts are the
   engine's, as the server sends them (curfew_core/selectors/heads_up.py):
   the Now card's #heads-up-facts block on the overview, and the site's own
   capsule's pushes ("curfew:state") where it is shown. Once per boundary
   (remembered in this browser, so a reload or a second tab does not say it
   again): a banner at the top of the page with a snooze (30 minutes of overtime, the overview's own
   override form, offered only when the engine says it would put the change
   off) and, if this browser allows it, a notification. Whether to
   be warned is this browser's choice, beside its notification permission:
   "Stop these heads-ups" turns them off here, the overview turns them on. */
(function () {
  "use strict";
  var OFF_KEY = "curfew-heads-up";
  var FIRED_KEY = "curfew-heads-up-fired";
  var timer = null;
  var facts = null; // {next, at (ms, the server's instant), received (ms, this clock)}

  function store(name, value) {
    try {
      if (value === undefined) return window.localStorage.getItem(name);
      if (value === null) window.localStorage.removeItem(name);
      else window.localStorage.setItem(name, value);
    } catch (e) {
      return null;
    }
    return null;
  }

  function enabled() {
    return store(OFF_KEY) !== "off";
  }

  function lang() {
    return /^zh/i.test(document.documentElement.lang || "") ? "zh" : "en";
  }

  function boundary(next) {
    return next.state + "@" + next.at;
  }

  function words(next, leftMs) {
    var text = next.words && (next.words[lang()] || next.words.en);
    if (!text) return "";
    var minutes = Math.max(1, Math.ceil(leftMs / 60000));
    return text.replace("{minutes}", String(minutes)).replace("{at}", next.local || "");
  }

  function notify(text, next) {
    if (!("Notification" in window) || window.Notification.permission !== "granted") return;
    try {
      // ``tag``: one notification per boundary, even if two pages fire.
      new window.Notification("Curfew", { body: text, tag: boundary(next), lang: lang() });
    } catch (e) {
      /* A browser that allows notifications only from a service worker: the toast says it. */
    }
  }

  function closeToast() {
    var open = document.getElementById("heads-up");
    if (open) open.remove();
  }

  function showToast(text, next) {
    var template = document.getElementById("heads-up-template");
    if (!template || !document.body) return;
    closeToast();
    var toast = template.content.firstElementChild.cloneNode(true);
    toast.querySelector(".heads-up-words").textContent = text;
    // The snooze only where the engine says it would put the change off
    // (next.snooze): a team that lets no overtime lift its night keeps it.
    var snooze = toast.querySelector("#heads-up-snooze");
    if (snooze && next && next.snooze === false) {
      snooze.closest("form").remove();
    }
    var ask = toast.querySelector("#heads-up-notify");
    if (ask) {
      // Removed, not hidden: a .btn's display would win over [hidden].
      if ("Notification" in window && window.Notification.permission === "default") {
        ask.addEventListener("click", function () {
          window.Notification.requestPermission().then(function () { ask.remove(); });
        });
      } else {
        ask.remove();
      }
    }
    toast.querySelector("#heads-up-off").addEventListener("click", function () {
      store(OFF_KEY, "off");
      closeToast();
      showPreference();
    });
    toast.querySelector("#heads-up-close").addEventListener("click", closeToast);
    // In the page's flow, at the top of its content: never over a control.
    var main = document.getElementById("main") || document.body;
    main.insertBefore(toast, main.firstChild);
  }

  function fire() {
    timer = null;
    var next = facts && facts.next;
    if (!next || !next.words || !enabled()) return;
    var now = facts.at + (Date.now() - facts.received);
    var change = Date.parse(next.at);
    if (!(change > now)) return;
    if (store(FIRED_KEY) === boundary(next)) return;
    store(FIRED_KEY, boundary(next));
    var text = words(next, change - now);
    document.documentElement.setAttribute("data-heads-up", next.state);
    showToast(text, next);
    notify(text, next);
  }

  function arm(fresh) {
    if (!fresh) return;
    var same = facts && facts.next && fresh.next && boundary(facts.next) === boundary(fresh.next);
    facts = fresh;
    if (same && timer !== null) return;
    clearTimeout(timer);
    timer = null;
    var next = fresh.next;
    if (!next || !next.words) return;
    var now = fresh.at + (Date.now() - fresh.received);
    var from = Date.parse(next.heads_up_at);
    if (isNaN(from)) return;
    timer = setTimeout(fire, Math.min(Math.max(from - now, 0), 0x7fffffff));
  }

  function fromCard() {
    var block = document.getElementById("heads-up-facts");
    if (!block) return;
    try {
      var data = JSON.parse(block.textContent);
      var at = Date.parse(data.at);
      arm({ next: data.next, at: isNaN(at) ? Date.now() : at, received: Date.now() });
    } catch (e) {
      /* No facts, no heads-up. */
    }
  }

  /* The overview's line saying whether heads-ups are on in this browser. */
  function showPreference() {
    var pref = document.getElementById("heads-up-pref");
    if (!pref) return;
    pref.hidden = false;
    pref.setAttribute("data-on", enabled() ? "1" : "0");
    pref.querySelectorAll("[data-when]").forEach(function (part) {
      part.hidden = part.getAttribute("data-when") !== (enabled() ? "on" : "off");
    });
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target || !target.closest) return;
    var toggle = target.closest("[data-heads-up-toggle]");
    if (!toggle) return;
    var on = toggle.getAttribute("data-heads-up-toggle") === "on";
    store(OFF_KEY, on ? null : "off");
    if (on) {
      store(FIRED_KEY, null);
      if ("Notification" in window && window.Notification.permission === "default") {
        window.Notification.requestPermission();
      }
      if (facts) arm({ next: facts.next, at: facts.at, received: facts.received });
    }
    showPreference();
  });
  document.addEventListener("DOMContentLoaded", function () {
    fromCard();
    showPreference();
  });
  document.addEventListener("htmx:afterSettle", function () {
    fromCard();
    showPreference();
  });
  document.addEventListener("curfew:state", function (event) {
    var detail = event.detail || {};
    if ("next" in detail) {
      arm({ next: detail.next, at: detail.at || Date.now(), received: Date.now() });
    }
  });
})();

/* A person's Save, Revoke or search answered with one of the site's whole
   error pages (a key revoked in another tab: 404; a form whose page expired:
   403; a server error or outage: 500, 503) shows it as following a link
   would: the error page's main takes this page's main. Swapped where the
   form aimed its fragment, it was a page inside a card (a second top bar,
   the form gone); a 5xx was not swapped at all (base.html's htmx-config),
   so nothing showed. A form's own refusal (422: its fields flagged; 409:
   saved elsewhere) is a fragment and is swapped where it was aimed. Only
   what a person set off: a poll or a live preview keeps its own target. */
(function () {
  "use strict";
  var WHOLE_PAGE = /^\s*<!doctype html/i;

  function byPerson(config) {
    var event = config && config.triggeringEvent;
    return !!event && event.isTrusted === true && (event.type === "submit" || event.type === "click");
  }

  /* What a person set off that did not go through: a 5xx that is not one of
     the site's pages (a proxy's bare 502, an empty 503), or no answer at all
     (the server down or refusing, the browser offline: htmx's sendError).
     Nothing is swapped, so the form keeps what the person filled in, and a
     line beside what failed says it did not go through, in the page's
     language (body's data-not-<what>[-unreached]; <what> is the form's
     data-not-done, "saved" unless it says otherwise, as a Revoke does). The
     line goes where the person looks: a Save's in its save bar (sticky, on
     screen, where the form's top may not be); a form in a table row's
     (a Revoke's) in a row of its own under it, as wide as the row, not in
     the button's narrow cell; any other form's above it. The person's next
     Save or click takes it away (not a poll or a live preview). htmx sets no
     request timeout here (base.html's htmx-config): a slow answer still
     comes, so htmx:timeout is not one of these. */
  function notDone(detail, unreached) {
    var config = detail.requestConfig;
    var elt = (config && config.elt) || detail.elt;
    var form = elt && elt.closest ? elt.closest("form") || elt : null;
    var body = document.body;
    if (!form || !form.parentNode || !body) return;
    var what = form.getAttribute("data-not-done") || "saved";
    var suffix = unreached ? "-unreached" : "";
    var words = body.getAttribute("data-not-" + what + suffix) || body.getAttribute("data-not-saved" + suffix);
    if (!words) return;
    var line = document.createElement("p");
    line.className = "not-saved";
    line.setAttribute("role", "alert");
    line.textContent = words;
    var put = place(line, elt, form);
    var address = elt.getAttribute("hx-post");
    if (put && (elt.id || address)) kept.push({ node: put, line: line, id: elt.id, address: address });
  }

  /* Puts a line beside what failed (see above); what went into the page:
     the line, or the row made for it. */
  function place(line, elt, form) {
    var bar = elt.closest("[data-savebar]");
    var row = form.closest("tr");
    if (bar) {
      bar.insertBefore(line, bar.firstChild);
      return line;
    }
    if (row && row.parentNode) {
      var under = document.createElement("tr");
      under.className = "not-saved-row";
      var cell = document.createElement("td");
      var span = 0;
      Array.prototype.forEach.call(row.cells, function (c) {
        span += c.colSpan || 1;
      });
      cell.colSpan = Math.max(span, 1);
      cell.appendChild(line);
      under.appendChild(cell);
      row.parentNode.insertBefore(under, row.nextSibling);
      return under;
    }
    form.parentNode.insertBefore(line, form);
    return line;
  }

  /* A swap nobody set off (the Team page's members card re-read when a
     member's state changes, a poll) replaces the form a line stood beside,
     and the line with it, seconds after it said so: nothing had gone
     through all the same. Each line is put back beside its form in what
     came in (found by the id of what was pressed, or else by its address,
     hx-post: a member's row's forms have their member's), or dropped with
     its form. */
  var kept = [];

  function putBack() {
    kept = kept.filter(function (entry) {
      if (entry.node.isConnected) return true;
      var found = entry.id ? document.getElementById(entry.id) : null;
      if (!entry.id) {
        document.querySelectorAll("[hx-post]").forEach(function (candidate) {
          if (!found && candidate.getAttribute("hx-post") === entry.address) found = candidate;
        });
      }
      var form = found && (found.closest("form") || found);
      if (!form || !form.parentNode) return false;
      entry.node = place(entry.line, found, form);
      return true;
    });
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (!byPerson(event.detail && event.detail.requestConfig)) return;
    kept = [];
    document.querySelectorAll("tr.not-saved-row, p.not-saved").forEach(function (line) {
      line.remove();
    });
  });

  document.addEventListener("htmx:afterSwap", function () {
    if (kept.length) putBack();
  });

  document.addEventListener("htmx:sendError", function (event) {
    var detail = event.detail;
    if (detail && byPerson(detail.requestConfig)) notDone(detail, true);
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    var xhr = detail.xhr;
    var main = document.getElementById("main");
    if (!xhr || xhr.status < 400 || !main || !byPerson(detail.requestConfig)) return;
    var text = typeof detail.serverResponse === "string" ? detail.serverResponse : "";
    if (!WHOLE_PAGE.test(text) || text.indexOf('id="main"') === -1) {
      if (xhr.status >= 500) notDone(detail, false);
      return;
    }
    detail.shouldSwap = true;
    detail.target = main;
    detail.selectOverride = "#main";
    detail.swapOverride = "outerHTML";
  });
})();
