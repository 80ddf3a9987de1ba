/*
 * Curfew status capsule: a small live pill saying what the AI is doing right now.
 *
 *   <script src="https://HOST/static/curfew/capsule.js" data-token="EMBED_TOKEN"></script>
 *
 * Renders into a shadow root next to the script tag (or into data-target), with
 * its own stylesheet loaded from the script's own origin, so the host page's CSS
 * cannot break it and it cannot break the host page. The server origin is taken
 * from the script's own src. Options (data-*): token (omit on the Curfew site
 * itself: the session is used), mode ("wide": face and words, "narrow": face
 * only), lang ("en" | "zh"), css (stylesheet URL), target (CSS selector),
 * poll (longest seconds between fallback polls, default 30), band ("24h": today's
 * 24-hour band under the pill, as the settings page draws it, with a now marker).
 *
 * Heads-up: each push says what changes next and when (``next``, from the
 * engine's own edges, curfew_core/selectors/heads_up.py). From ``heads_up_at``
 * (10 minutes before) the pill says "sleepy in 7 min" where its detail is,
 * counting down, with the whole sentence ("Your AI gets sleepy in 7 min
 * (23:00).") as its title and spoken once: inside the pill, so a 48 px iframe
 * shows it as well as a page does. Only words: the capsule has no snooze, here
 * or embedded in another site's page, whose embed token is read-only; the
 * settings page's own script (page.js) offers the snooze and the notification.
 *
 * Transport: one WebSocket (/ws/capsule/); the server pushes the state on
 * connect and on every change. When the socket drops it reconnects with
 * exponential backoff and jitter (first retry within 1 s, capped at 30 s) and
 * meanwhile shows "reconnecting" instead of a state it can no longer vouch for.
 * While sockets fail but HTTP works (a proxy that refuses WebSockets, a browser
 * without them) it polls /embed/state. Close codes 4401 (unknown or revoked
 * token, not signed in) and 4403 (origin refused) stop it: retrying cannot help.
 */
(function () {
  "use strict";

  var script = document.currentScript;
  if (!script || !script.src) {
    return;
  }
  var scriptUrl = new URL(script.src, document.baseURI);
  var ORIGIN = scriptUrl.origin;
  var data = function (name) {
    return script.getAttribute("data-" + name) || "";
  };
  var token = data("token");
  var mode = data("mode") === "narrow" ? "narrow" : "wide";
  var cssHref = new URL(data("css") || "capsule.css", scriptUrl).href;
  var pollMax = Math.max(1, parseFloat(data("poll")) || 30) * 1000;
  var langGuess = data("lang") || document.documentElement.lang || navigator.language || "en";
  var lang = /^zh/i.test(langGuess) ? "zh" : "en";
  // The band is asked of the server (?band=24h): only capsules that show it get it.
  var BAND = data("band") === "24h" ? "24h" : "";

  var CLOSE_UNAUTHORIZED = 4401;
  var CLOSE_FORBIDDEN_ORIGIN = 4403;
  var BACKOFF_CAP = 30; // seconds

  // The four states' names and the words beside them (the budget, until when,
  // only watching) are not here: each push carries them in every language with
  // the progress percent (curfew_core/vocabulary.py), so the capsule says
  // exactly what the settings page says. Only the words of the capsule's own
  // connection, needed before any push, live in this table.
  var TEXT = {
    en: {
      connecting: "connecting…",
      reconnecting: "reconnecting…",
      unauthorized: "embed token refused",
      signedOut: "signed out: sign in again",
      signedOutNote: "This browser was signed out, so the capsule stopped. Sign in again to see it.",
      forbidden: "origin refused",
      announce: "AI status: ",
      unknown: "AI status unknown: ",
      staleNote: "Connection lost; retrying. The last state is not shown: it may no longer be true.",
      pollNote: "Live connection unavailable; checking every few seconds.",
      refusedNote: "The server refused this capsule: ",
    },
    zh: {
      connecting: "连接中…",
      reconnecting: "重新连接中…",
      unauthorized: "嵌入令牌被拒绝",
      signedOut: "已退出登录：请重新登录",
      signedOutNote: "这个浏览器已退出登录，胶囊已停止。请重新登录后查看。",
      forbidden: "来源被拒绝",
      announce: "AI 状态：",
      unknown: "AI 状态未知：",
      staleNote: "连接已断开，正在重试。不显示上次的状态：它可能已经不对了。",
      pollNote: "实时连接不可用；每隔几秒查询一次。",
      refusedNote: "服务器拒绝了这个胶囊：",
    },
  }[lang];

  // Faces are plain text (no emoji font needed), so narrow mode still reads.
  // A state's face comes with each push (s.face, curfew_core/vocabulary.py);
  // these are the capsule's own: overtime, switched off, and its connection's.
  var FACES = {
    overtime: "(ò_ó)",
    disabled: "(•_•)",
    unknown: "(?_?)",
    refused: "(x_x)",
  };

  // -- DOM ------------------------------------------------------------------
  function el(tag, cls) {
    var node = document.createElement(tag);
    if (cls) {
      node.className = cls;
    }
    return node;
  }

  var host = el("curfew-capsule");
  host.hidden = true; // shown once its stylesheet has loaded (or failed: never invisible)
  var root = host.attachShadow({ mode: "open" });
  var link = el("link");
  link.rel = "stylesheet";
  link.href = cssHref;
  link.addEventListener("load", function () {
    host.setAttribute("data-css", "loaded");
    host.hidden = false;
  });
  link.addEventListener("error", function () {
    host.setAttribute("data-css", "failed");
    host.hidden = false;
  });
  var pill = el("span", "capsule");
  pill.setAttribute("part", "capsule");
  pill.setAttribute("data-mode", mode);
  var face = el("span", "face");
  face.setAttribute("aria-hidden", "true");
  var words = el("span", "words");
  var label = el("span", "label");
  var detail = el("span", "detail");
  var meter = el("span", "meter");
  meter.setAttribute("aria-hidden", "true");
  var fill = el("span", "fill");
  meter.appendChild(fill);
  words.appendChild(label);
  words.appendChild(detail);
  pill.appendChild(face);
  pill.appendChild(words);
  pill.appendChild(meter);
  var live = el("span", "announce");
  live.setAttribute("role", "status");
  live.setAttribute("aria-live", "polite");
  root.appendChild(link);
  root.appendChild(pill);

  // The 24-hour band (data-band="24h"): the cells are drawn from the pushed runs.
  var band = null;
  var bandCells = null;
  var bandNow = null;
  if (BAND) {
    host.setAttribute("data-band", BAND);
    band = el("span", "band");
    band.setAttribute("part", "band");
    band.setAttribute("role", "img");
    band.hidden = true;
    bandCells = el("span", "band-cells");
    bandNow = el("span", "band-now");
    bandNow.hidden = true;
    var axis = el("span", "band-axis");
    axis.setAttribute("aria-hidden", "true");
    ["00", "06", "12", "18", "24"].forEach(function (hour) {
      var tick = el("span");
      tick.textContent = hour;
      axis.appendChild(tick);
    });
    band.appendChild(bandCells);
    band.appendChild(axis);
    root.appendChild(band);
  }
  // The heads-up, in the pill where the detail is (words only: see the header).
  var headsUp = el("span", "heads-up");
  headsUp.setAttribute("part", "heads-up");
  headsUp.hidden = true;
  words.appendChild(headsUp);
  root.appendChild(live);

  // -- rendering ------------------------------------------------------------
  function hhmm(iso, zone) {
    if (!iso) {
      return "";
    }
    try {
      return new Date(iso).toLocaleTimeString(lang === "zh" ? "zh-CN" : "en-GB", {
        timeZone: zone || undefined,
        hour: "2-digit",
        minute: "2-digit",
        hour12: false,
      });
    } catch (e) {
      return iso.slice(11, 16);
    }
  }

  // A pushed word with its %(name)s filled in ("" when the server sent none).
  function say(s, key, values) {
    var said = (s.words && s.words[lang] && s.words[lang][key]) || "";
    return said.replace(/%\((\w+)\)s/g, function (_m, name) {
      return values && values[name] !== undefined ? String(values[name]) : "";
    });
  }

  function describe(s) {
    // Overtime is named only while it holds (working normally): a team's
    // night the team's policy keeps shows as the engine's state, the
    // overtime said beside it (the server says which: overtime_held).
    var held = s.override === "overtime" && s.overtime_held === true;
    var key =
      s.enabled === false ? "disabled" : s.override === "overtime" && !held ? "overtime" : s.state;
    var named = key === "disabled" || key === "overtime" ? say(s, key) : "";
    var text = named || (s.names && s.names[lang]) || s.state;
    var parts = [];
    var progress = null;
    var at = { at: hhmm(s.override_until, s.timezone) };
    // The states are not named here: the push says what holds. A percent
    // comes only while getting sleepy, "forced" only while switched off by
    // hand, a reply only in a state that answers in place of the AI.
    if (key === s.state && typeof s.percent === "number") {
      // The server's whole percent (floored there, the page shows the same): never re-rounded here.
      progress = s.percent;
      text += " " + progress + " %";
      if (s.budget !== null && s.budget !== undefined) {
        parts.push(say(s, "budget", { n: s.budget }));
      }
    } else if (key === "overtime") {
      parts.push(say(s, "until", at));
    } else if (key === s.state && s.forced) {
      parts.push(say(s, "forced", at));
    } else if (key === s.state && s.reply) {
      parts.push(say(s, "replies", { reply: s.reply }));
    }
    if (held && key === s.state) {
      // What holds it, the team's peak hours or its night (the server says
      // which: overtime_held_by), as the Overview's headline says.
      parts.push(say(s, s.overtime_held_by === "peak" ? "overtime_held_peak" : "overtime_held"));
    }
    if (s.dry_run) {
      parts.push(say(s, "dry_run"));
    }
    parts = parts.filter(function (part) {
      return part;
    });
    return { key: key, face: FACES[key] || s.face, label: text, detail: parts.join(" · "), progress: progress };
  }

  // -- the band ---------------------------------------------------------------
  var bandKey = "";
  var bandDay = null; // {date, at (ms, server's instant), received (ms, local clock), zone}
  var nowTimer = null;

  function wallTime(minutes) {
    var h = Math.floor(minutes / 60);
    var m = minutes % 60;
    return (h < 10 ? "0" : "") + h + ":" + (m < 10 ? "0" : "") + m;
  }

  function drawBand(b) {
    var key = JSON.stringify([b.date, b.step, b.runs]);
    if (key === bandKey) {
      return;
    }
    bandKey = key;
    while (bandCells.firstChild) {
      bandCells.removeChild(bandCells.firstChild);
    }
    var spoken = [];
    var start = 0;
    b.runs.forEach(function (run) {
      var state = run[0];
      var names = (b.names && b.names[state]) || {};
      var name = names[lang] || state;
      var end = start + run[1] * b.step;
      spoken.push(wallTime(start) + "–" + wallTime(end) + " " + name);
      for (var i = 0; i < run[1]; i++) {
        var cell = el("span", "cell s-" + state);
        cell.setAttribute("data-state", state);
        bandCells.appendChild(cell);
      }
      start = end;
    });
    bandCells.appendChild(bandNow);
    var sentence = b.date + ": " + spoken.join(", ");
    band.setAttribute("aria-label", sentence);
    band.title = sentence;
  }

  function placeNow() {
    clearTimeout(nowTimer);
    nowTimer = null;
    if (!band || !bandDay || !attached()) {
      return;
    }
    // The server's instant moved on by the time since it arrived (a time machine too).
    var instant = new Date(bandDay.at + (Date.now() - bandDay.received));
    var parts = {};
    try {
      new Intl.DateTimeFormat("en-CA", {
        timeZone: bandDay.zone || undefined,
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        hourCycle: "h23",
      })
        .formatToParts(instant)
        .forEach(function (part) {
          parts[part.type] = part.value;
        });
    } catch (e) {
      bandNow.hidden = true;
      return;
    }
    var date = parts.year + "-" + parts.month + "-" + parts.day;
    var minutes = Number(parts.hour) * 60 + Number(parts.minute);
    bandNow.hidden = date !== bandDay.date || isNaN(minutes);
    // CSSOM, not a style attribute: allowed under a strict style-src.
    bandNow.style.left = ((minutes / 1440) * 100).toFixed(3) + "%";
    host.setAttribute("data-now", bandNow.hidden ? "" : wallTime(minutes));
    // Moves each minute; the next day's band is pushed by the server at midnight.
    nowTimer = setTimeout(placeNow, 60000 - (instant.getTime() % 60000) + 50);
  }

  function showBand(s) {
    if (!band) {
      return;
    }
    var b = s && s.band;
    if (!b || !b.runs || !b.step) {
      // No band to vouch for (connecting, reconnecting, refused): none is shown.
      band.hidden = true;
      bandDay = null;
      clearTimeout(nowTimer);
      nowTimer = null;
      return;
    }
    drawBand(b);
    band.hidden = false;
    var at = Date.parse(s.at);
    bandDay = { date: b.date, at: isNaN(at) ? Date.now() : at, received: Date.now(), zone: s.timezone };
    placeNow();
  }

  // -- the heads-up ----------------------------------------------------------
  var headsUpTimer = null;
  var headsUpFacts = null; // {next, at (ms, server's instant), received (ms, local clock)}
  var spokenHeadsUp = "";

  function fillIn(text, leftMs, next) {
    var minutes = Math.max(1, Math.ceil(leftMs / 60000));
    return text.replace("{minutes}", String(minutes)).replace("{at}", next.local || "");
  }

  function inLang(table) {
    return (table && (table[lang] || table.en)) || "";
  }

  function hideHeadsUp() {
    headsUp.hidden = true;
    headsUp.textContent = "";
    detail.hidden = !detail.textContent;
    host.removeAttribute("data-heads-up");
    pill.removeAttribute("data-heads-up");
  }

  function showHeadsUp(facts) {
    clearTimeout(headsUpTimer);
    headsUpTimer = null;
    headsUpFacts = facts;
    var next = facts && facts.next;
    if (!next || !next.words || !attached()) {
      hideHeadsUp();
      return;
    }
    // The server's instant moved on by the time since it arrived (pretend too).
    var now = facts.at + (Date.now() - facts.received);
    var change = Date.parse(next.at);
    var from = Date.parse(next.heads_up_at);
    if (isNaN(change) || isNaN(from) || now >= change) {
      hideHeadsUp();
      return;
    }
    if (now < from) {
      hideHeadsUp();
      headsUpTimer = setTimeout(function () { showHeadsUp(headsUpFacts); }, Math.min(from - now + 50, 0x7fffffff));
      return;
    }
    var sentence = fillIn(inLang(next.words), change - now, next);
    headsUp.textContent = fillIn(inLang(next.short) || inLang(next.words), change - now, next);
    headsUp.hidden = false;
    // The pill's own detail (a budget, a reply) gives way to the heads-up meanwhile.
    detail.hidden = true;
    host.setAttribute("data-heads-up", next.state);
    pill.setAttribute("data-heads-up", next.state);
    pill.title = sentence;
    // Spoken once per boundary, not at each minute's count.
    if (spokenHeadsUp !== next.state + "@" + next.at) {
      spokenHeadsUp = next.state + "@" + next.at;
      announce(sentence);
    }
    // Counts down each minute; the push at the change replaces it.
    headsUpTimer = setTimeout(function () { showHeadsUp(headsUpFacts); }, Math.min(60000, change - now + 50));
  }

  var lastAnnounced = "";
  function announce(sentence) {
    // Only real changes are spoken, not every identical push.
    if (sentence !== lastAnnounced) {
      lastAnnounced = sentence;
      live.textContent = sentence;
    }
  }

  function paint(stateKey, linkState, faceText, labelText, detailText, title) {
    pill.setAttribute("data-state", stateKey);
    pill.setAttribute("data-link", linkState);
    host.setAttribute("data-state", stateKey);
    host.setAttribute("data-link", linkState);
    face.textContent = faceText || FACES.unknown;
    label.textContent = labelText;
    detail.textContent = detailText;
    detail.hidden = !detailText;
    pill.title = title;
  }

  function showState(s, linkState) {
    var d = describe(s);
    // The reason in the capsule's language (the payload's "reasons"), else the engine's English.
    var title = (s.reasons && s.reasons[lang]) || s.reason || d.label;
    if (linkState === "polling") {
      title += "\n" + TEXT.pollNote;
    }
    paint(d.key, linkState, d.face, d.label, d.detail, title);
    meter.hidden = d.progress === null;
    // CSSOM, not a style attribute: allowed under a strict style-src.
    fill.style.width = (d.progress === null ? 0 : d.progress) + "%";
    showBand(s);
    var at = Date.parse(s.at);
    var facts = { next: s.next || null, at: isNaN(at) ? Date.now() : at, received: Date.now() };
    announce(TEXT.announce + d.label + (d.detail ? ", " + d.detail : ""));
    showHeadsUp(facts);
    if (!token) {
      // The site's own capsule (on the session) tells its page what the
      // server pushed, so the page's pretend banner and heads-up follow (page.js).
      document.dispatchEvent(
        new CustomEvent("curfew:state", {
          detail: { pretending: !!s.debug_at, next: facts.next, at: facts.at },
        })
      );
    }
  }

  function showUnknown(linkState) {
    var word = TEXT[linkState] || TEXT.reconnecting;
    paint("unknown", linkState, FACES.unknown, word, "", TEXT.staleNote);
    meter.hidden = true;
    showBand(null);
    showHeadsUp(null);
    if (linkState !== "connecting") {
      announce(TEXT.unknown + word);
    }
  }

  function showRefused(code) {
    var word = code === CLOSE_FORBIDDEN_ORIGIN ? TEXT.forbidden : TEXT.unauthorized;
    var note = TEXT.refusedNote + word + " (" + code + ")";
    if (code === CLOSE_UNAUTHORIZED && !token) {
      // No token: this is the site's own capsule, on the session. Refused
      // means the session was signed out, and "embed token refused" would
      // name a token the person never had.
      word = TEXT.signedOut;
      note = TEXT.signedOutNote;
    }
    paint("refused", "refused", FACES.refused, word, "", note);
    meter.hidden = true;
    showBand(null);
    showHeadsUp(null);
    announce(TEXT.unknown + word);
  }

  // -- transport ------------------------------------------------------------
  var socket = null;
  var socketLive = false; // the open socket has delivered a state
  var attempt = 0;
  var retryTimer = null;
  var pollTimer = null;
  var polling = false; // a poll request is in flight
  var stopped = false;

  function endpoint(path, scheme) {
    var url = new URL(path, ORIGIN);
    if (scheme) {
      url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    }
    if (token) {
      url.searchParams.set("token", token);
    }
    if (BAND) {
      url.searchParams.set("band", BAND);
    }
    return url.href;
  }

  function attached() {
    // A capsule removed from the page (an htmx swap, an SPA route) lets go of the server.
    if (!stopped && !host.isConnected) {
      stop();
    }
    return !stopped;
  }

  function stop() {
    stopped = true;
    clearTimeout(retryTimer);
    clearTimeout(pollTimer);
    clearTimeout(nowTimer);
    if (socket) {
      socket.onclose = null;
      socket.close();
      socket = null;
    }
  }

  function connect() {
    retryTimer = null;
    if (!attached()) {
      return;
    }
    if (typeof WebSocket === "undefined") {
      poll();
      return;
    }
    var ws;
    try {
      ws = new WebSocket(endpoint("/ws/capsule/", true));
    } catch (e) {
      dropped();
      return;
    }
    socket = ws;
    socketLive = false;
    ws.onmessage = function (event) {
      var state;
      try {
        state = JSON.parse(event.data);
      } catch (e) {
        return;
      }
      if (!attached()) {
        return;
      }
      attempt = 0;
      socketLive = true;
      clearTimeout(pollTimer);
      pollTimer = null;
      showState(state, "live");
    };
    ws.onclose = function (event) {
      if (socket === ws) {
        socket = null;
      }
      socketLive = false;
      if (!attached()) {
        return;
      }
      if (event.code === CLOSE_UNAUTHORIZED || event.code === CLOSE_FORBIDDEN_ORIGIN) {
        stopped = true;
        clearTimeout(pollTimer);
        showRefused(event.code);
        return;
      }
      dropped();
    };
  }

  function dropped() {
    if (pollTimer === null) {
      // Not already showing a polled state: do not pretend to know it.
      showUnknown("reconnecting");
    }
    scheduleRetry();
    if (pollTimer === null) {
      poll();
    }
  }

  function scheduleRetry() {
    if (retryTimer !== null || stopped) {
      return;
    }
    // 1, 2, 4, 8, 16, 30, 30 … seconds, each drawn from its upper half (jitter),
    // so a restarted server is not hit by every capsule in the same instant.
    var cap = Math.min(BACKOFF_CAP, Math.pow(2, attempt));
    attempt += 1;
    var delay = (cap / 2 + (Math.random() * cap) / 2) * 1000;
    host.setAttribute("data-retry-ms", String(Math.round(delay)));
    retryTimer = setTimeout(connect, delay);
  }

  function poll() {
    pollTimer = null;
    if (polling || !attached() || socketLive) {
      return;
    }
    polling = true;
    fetch(endpoint("/embed/state", false), {
      credentials: token ? "omit" : "same-origin",
      cache: "no-store",
    })
      .then(function (response) {
        if (response.status === 401) {
          var refused = new Error("unauthorized");
          refused.refused = true;
          throw refused;
        }
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (state) {
        polling = false;
        if (!attached() || socketLive) {
          return;
        }
        showState(state, "polling");
        var untilChange = Date.parse(state.valid_until) - Date.now();
        var wait = Math.min(pollMax, Math.max(1000, isNaN(untilChange) ? pollMax : untilChange + 50));
        pollTimer = setTimeout(poll, wait);
      })
      .catch(function (error) {
        polling = false;
        if (!attached() || socketLive) {
          return;
        }
        if (error && error.refused) {
          stop();
          showRefused(CLOSE_UNAUTHORIZED);
          return;
        }
        showUnknown("reconnecting");
        if (typeof WebSocket === "undefined") {
          // No socket to retry: the poll itself backs off.
          scheduleRetry();
        }
      });
  }

  window.addEventListener("online", function () {
    // The network is back: do not sit out the rest of a long backoff.
    if (retryTimer !== null && !stopped) {
      clearTimeout(retryTimer);
      retryTimer = null;
      connect();
    }
  });

  // -- mount ----------------------------------------------------------------
  function mount() {
    var selector = data("target");
    var target = selector ? document.querySelector(selector) : null;
    if (target) {
      target.appendChild(host);
    } else if (script.parentNode && script.parentNode !== document.head) {
      script.parentNode.insertBefore(host, script.nextSibling);
    } else {
      document.body.appendChild(host);
    }
    showUnknown("connecting");
    connect();
  }

  if (document.body && (!data("target") || document.readyState !== "loading")) {
    mount();
  } else {
    document.addEventListener("DOMContentLoaded", mount);
  }
})();
