/* The winding curve you can touch: drag an anchor on the chart (mouse, touch,
   pen) or edit it from the keyboard, and its row in the anchor table follows.
   On release (or a key press) an "input" event on the changed box runs the
   form's own live preview (htmx), which redraws the chart.

   Everything this needs comes from the figure's "edit" block, made by
   curfew_core/web/charts.py: each anchor's time and tokens, whether the curve
   shape ignores it (the engine's unused_anchors) and why, the declared token
   bounds, the steps and the words. Nothing about the curve is decided here.
   The table's boxes are the truth between redraws: an anchor is its row.
   Styles are classes, or CSSOM properties for the handle's place (the strict
   CSP allows those; it refuses style attributes). */
(function () {
  "use strict";

  var CHART = "curve-chart";
  var ROWS = "#anchor-rows [data-row]";
  /* How near (px) a press must be to an anchor to grab it. */
  var REACH = { mouse: 12, pen: 16, touch: 26 };
  /* Movement (px) below which a drag keeps the anchor's time or tokens. */
  var DEAD_X = 8;
  var DEAD_Y = 4;

  var selected = null; /* the selected anchor's row */
  var drag = null;
  var refocus = false;

  function chart() { return document.getElementById(CHART); }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function minutes(text) {
    var match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec((text || "").trim());
    return match ? Number(match[1]) * 60 + Number(match[2]) : null;
  }

  function wall(total) {
    total = ((total % 1440) + 1440) % 1440;
    return pad(Math.floor(total / 60)) + ":" + pad(total % 60);
  }

  function boxes(row) {
    return {
      time: row.querySelector("input[name$='-time']"),
      tokens: row.querySelector("input[name$='-tokens']"),
    };
  }

  /* The first row holding this time (a repeat is flagged and not drawn). */
  function rowAt(at) {
    var target = minutes(at);
    var rows = document.querySelectorAll(ROWS);
    for (var i = 0; i < rows.length; i += 1) {
      if (minutes(boxes(rows[i]).time.value) === target) return rows[i];
    }
    return null;
  }

  /* ---- what the chart holds ------------------------------------------- */

  function readEdit(gd) {
    var source = document.getElementById(gd.getAttribute("data-figure") || "");
    if (!source) return null;
    try {
      return JSON.parse(source.textContent).edit || null;
    } catch (error) {
      return null;
    }
  }

  /* Minutes of chart x for a row's time, and back (snapped, inside the window). */
  function xOf(edit, at) {
    var t = edit.time;
    var m = minutes(at);
    if (m === null || !t.span) return null;
    return ((m - t.origin + 1440) % 1440) / t.span * t.window;
  }

  function atOf(edit, x) {
    var t = edit.time;
    var offset = Math.round((x / t.window) * t.span / t.step) * t.step;
    offset = Math.max(0, Math.min(t.span, offset));
    return wall(t.origin + offset);
  }

  /* An anchor as its row says now: { row, at, tokens, x, ignored, why, n }. */
  function anchorOf(gd, row) {
    var state = gd._curveDrag;
    if (!state || !row) return null;
    var index = state.rows.indexOf(row);
    if (index < 0) return null;
    var b = boxes(row);
    var tokens = parseInt(b.tokens.value, 10);
    var drawn = state.edit.anchors[index];
    var x = xOf(state.edit, b.time.value);
    return {
      row: row,
      at: b.time.value.trim(),
      tokens: isNaN(tokens) ? drawn.tokens : tokens,
      x: x === null ? drawn.x : x,
      ignored: drawn.ignored,
      why: drawn.why,
      n: index + 1,
    };
  }

  /* The plot's axes as plain numbers, so a drag can keep them fixed. */
  function axes(gd) {
    var full = gd._fullLayout;
    if (!full || !full.xaxis || !full.yaxis || !full.xaxis.range) return null;
    return {
      x0: full.xaxis._offset, xlen: full.xaxis._length, xr: full.xaxis.range.slice(),
      y0: full.yaxis._offset, ylen: full.yaxis._length, yr: full.yaxis.range.slice(),
    };
  }

  function toPx(ax, x, y) {
    return {
      x: ax.x0 + (x - ax.xr[0]) / (ax.xr[1] - ax.xr[0]) * ax.xlen,
      y: ax.y0 + (1 - (y - ax.yr[0]) / (ax.yr[1] - ax.yr[0])) * ax.ylen,
    };
  }

  function fromPx(ax, px, py) {
    return {
      x: ax.xr[0] + (px - ax.x0) / ax.xlen * (ax.xr[1] - ax.xr[0]),
      y: ax.yr[0] + (1 - (py - ax.y0) / ax.ylen) * (ax.yr[1] - ax.yr[0]),
    };
  }

  function local(gd, event) {
    var box = gd.getBoundingClientRect();
    return { x: event.clientX - box.left, y: event.clientY - box.top };
  }

  /* ---- the handle: a ring and a label on the selected anchor ------------- */

  function handle(gd) {
    var ring = gd.querySelector(".anchor-handle");
    if (!ring) {
      ring = document.createElement("div");
      ring.className = "anchor-handle";
      ring.setAttribute("aria-hidden", "true");
      var tag = document.createElement("span");
      tag.className = "anchor-handle-tag";
      ring.appendChild(tag);
      gd.appendChild(ring);
    }
    return ring;
  }

  function place(gd) {
    if (!gd || !gd._curveDrag) return;
    var ring = handle(gd);
    var anchor = anchorOf(gd, selected);
    var ax = drag && drag.ax ? drag.ax : axes(gd);
    if (!anchor || !ax) {
      ring.hidden = true;
      return;
    }
    var p = toPx(ax, anchor.x, anchor.tokens);
    var width = gd.clientWidth;
    var height = gd.clientHeight;
    ring.style.left = Math.max(0, Math.min(width, p.x)) + "px";
    ring.style.top = Math.max(0, Math.min(height, p.y)) + "px";
    ring.classList.toggle("is-ignored", anchor.ignored);
    ring.classList.toggle("tag-left", p.x > width * 0.6);
    ring.classList.toggle("tag-below", p.y < 36);
    ring.firstChild.textContent = anchor.at + " · " + anchor.tokens;
    ring.hidden = false;
  }

  function status() {
    var live = document.getElementById("curve-drag-status");
    var panel = document.getElementById("curve-panel");
    if (!live && panel && panel.parentNode) {
      /* Beside the panel, not in it: the preview swaps the panel. */
      live = document.createElement("p");
      live.id = "curve-drag-status";
      live.className = "sr-only";
      live.setAttribute("aria-live", "polite");
      panel.parentNode.insertBefore(live, panel.nextSibling);
    }
    return live;
  }

  function announce(gd) {
    var anchor = anchorOf(gd, selected);
    var live = status();
    if (!anchor || !live) return;
    var words = gd._curveDrag.edit.text.announce
      .replace("%(n)s", String(anchor.n))
      .replace("%(time)s", anchor.at)
      .replace("%(tokens)s", String(anchor.tokens));
    if (anchor.why) words += " (" + anchor.why + ")";
    live.textContent = words;
  }

  /* ---- after each draw -------------------------------------------------- */

  function markRows(state) {
    var ignored = new Map();
    state.rows.forEach(function (row, index) {
      if (row && state.edit.anchors[index].ignored) ignored.set(row, state.edit.anchors[index].why);
    });
    document.querySelectorAll(ROWS).forEach(function (row) {
      var hint = row.querySelector(".row-hint");
      var why = ignored.get(row);
      row.classList.toggle("is-ignored", why !== undefined);
      if (why === undefined) {
        if (hint) hint.remove();
        return;
      }
      if (!hint) {
        hint = document.createElement("span");
        hint.className = "row-hint";
        row.appendChild(hint);
      }
      hint.textContent = why;
    });
  }

  function attach(gd) {
    if (!gd || gd.id !== CHART) return;
    var edit = readEdit(gd);
    if (!edit || !edit.anchors.length) {
      gd._curveDrag = null;
      gd.removeAttribute("tabindex");
      document.querySelectorAll(ROWS).forEach(function (row) {
        row.classList.remove("is-ignored");
        var hint = row.querySelector(".row-hint");
        if (hint) hint.remove();
      });
      return;
    }
    gd._curveDrag = { edit: edit, rows: edit.anchors.map(function (a) { return rowAt(a.at); }) };
    gd.setAttribute("tabindex", "0");
    gd.setAttribute("role", "application");
    gd.setAttribute("aria-label", edit.text.help);
    gd.classList.add("is-editable");
    markRows(gd._curveDrag);
    if (selected && !document.contains(selected)) selected = null;
    if (gd.on && !gd._curveDragBound) {
      gd._curveDragBound = true;
      /* Redrawn in place (a resize, a colour scheme change): follow it. */
      gd.on("plotly_afterplot", function () { place(gd); });
    }
    place(gd);
    if (refocus) {
      refocus = false;
      gd.focus({ preventScroll: true });
    }
  }

  document.addEventListener("figure-drawn", function (event) { attach(event.target); });

  /* The preview swaps the panel the chart is in: keep the keyboard's place. */
  var focused = null;
  document.addEventListener("htmx:beforeSwap", function () {
    var gd = chart();
    focused = gd && document.activeElement === gd ? gd : null;
  });
  document.addEventListener("htmx:afterSwap", function () {
    var gd = chart();
    /* Only when the focused chart was the one swapped out. */
    refocus = !!focused && gd !== focused;
    focused = null;
    if (refocus && gd && gd._curveDrag === undefined) {
      gd.setAttribute("tabindex", "0");
      gd.focus({ preventScroll: true });
    }
  });

  /* ---- editing ----------------------------------------------------------- */

  /* A time no other row holds (times are unique), or null. */
  function free(row, at) {
    var holder = rowAt(at);
    return holder === null || holder === row ? at : null;
  }

  function set(row, at, tokens) {
    var b = boxes(row);
    var changed = null;
    if (at !== null && b.time.value.trim() !== at) {
      b.time.value = at;
      changed = b.time;
    }
    if (tokens !== null && b.tokens.value.trim() !== String(tokens)) {
      b.tokens.value = String(tokens);
      changed = b.tokens;
    }
    return changed;
  }

  /* Tell the form (its live preview and anything counting edits). */
  function commit(row, box) {
    var b = boxes(row);
    row.classList.toggle(
      "is-changed",
      b.time.value !== b.time.defaultValue || b.tokens.value !== b.tokens.defaultValue
    );
    box.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function clampTokens(edit, value) {
    return Math.max(edit.tokens.min, Math.min(edit.tokens.max, value));
  }

  function nearest(gd, point, reach) {
    var state = gd._curveDrag;
    var ax = axes(gd);
    if (!state || !ax) return null;
    var best = null;
    var bestDistance = reach;
    state.rows.forEach(function (row) {
      var anchor = anchorOf(gd, row);
      if (!anchor) return;
      var p = toPx(ax, anchor.x, anchor.tokens);
      var distance = Math.hypot(p.x - point.x, p.y - point.y);
      if (distance <= bestDistance) {
        best = anchor;
        bestDistance = distance;
      }
    });
    return best;
  }

  document.addEventListener("pointerdown", function (event) {
    var gd = event.target instanceof Element ? event.target.closest("#" + CHART) : null;
    if (!gd || !gd._curveDrag || drag || event.button > 0) return;
    var point = local(gd, event);
    var anchor = nearest(gd, point, REACH[event.pointerType] || REACH.mouse);
    if (!anchor) return;
    /* Ours, not Plotly's: no zoom box, no text selection, no scroll. */
    event.preventDefault();
    event.stopPropagation();
    var ax = axes(gd);
    var at = toPx(ax, anchor.x, anchor.tokens);
    drag = {
      id: event.pointerId,
      row: anchor.row,
      ax: ax,
      start: point,
      grab: { x: point.x - at.x, y: point.y - at.y },
      from: { at: anchor.at, tokens: anchor.tokens },
      box: null,
    };
    selected = anchor.row;
    try { gd.setPointerCapture(event.pointerId); } catch (error) { /* the window still hears it */ }
    gd.classList.add("is-dragging");
    if (window.Plotly && window.Plotly.Fx) window.Plotly.Fx.unhover(gd);
    gd.focus({ preventScroll: true });
    place(gd);
  }, true);

  /* A touch that grabbed an anchor drags it instead of scrolling the page. */
  function holdTouch(event) {
    if (drag) event.preventDefault();
  }
  document.addEventListener("touchstart", holdTouch, { passive: false });
  document.addEventListener("touchmove", holdTouch, { passive: false });

  window.addEventListener("pointermove", function (event) {
    var gd = chart();
    if (!gd || !gd._curveDrag) return;
    if (!drag) {
      if (event.pointerType === "mouse" && gd.contains(event.target)) {
        gd.classList.toggle("is-over-anchor", !!nearest(gd, local(gd, event), REACH.mouse));
      }
      return;
    }
    if (event.pointerId !== drag.id) return;
    event.preventDefault();
    var edit = gd._curveDrag.edit;
    var point = local(gd, event);
    var value = fromPx(drag.ax, point.x - drag.grab.x, point.y - drag.grab.y);
    var tokens = drag.from.tokens;
    if (Math.abs(point.y - drag.start.y) >= DEAD_Y) {
      var step = edit.tokens.step;
      tokens = clampTokens(edit, Math.round(value.y / step) * step);
    }
    var at = drag.from.at;
    if (edit.time.span && Math.abs(point.x - drag.start.x) >= DEAD_X) {
      at = free(drag.row, atOf(edit, value.x)) || boxes(drag.row).time.value.trim();
    }
    drag.box = set(drag.row, at, tokens) || drag.box;
    place(gd);
  });

  function release(event, cancelled) {
    if (!drag || event.pointerId !== drag.id) return;
    var gd = chart();
    var done = drag;
    drag = null;
    if (gd) {
      gd.classList.remove("is-dragging");
      try { gd.releasePointerCapture(event.pointerId); } catch (error) { /* already released */ }
    }
    if (cancelled) {
      set(done.row, done.from.at, done.from.tokens);
    } else if (done.box) {
      commit(done.row, done.box);
    }
    if (gd) {
      place(gd);
      announce(gd);
    }
  }

  window.addEventListener("pointerup", function (event) { release(event, false); });
  window.addEventListener("pointercancel", function (event) { release(event, true); });

  /* ---- the keyboard ------------------------------------------------------ */

  document.addEventListener("keydown", function (event) {
    var gd = event.target;
    if (!(gd instanceof Element) || gd.id !== CHART || !gd._curveDrag || drag) return;
    var state = gd._curveDrag;
    var edit = state.edit;
    var rows = state.rows.filter(function (row) { return row && document.contains(row); });
    if (!rows.length) return;
    var index = rows.indexOf(selected);
    var key = event.key;
    var timeStep = 0;
    var tokenStep = 0;
    if ((key === "ArrowLeft" || key === "ArrowRight") && event.altKey) {
      timeStep = key === "ArrowLeft" ? -1 : 1;
    } else if (key === "PageUp" || key === "PageDown") {
      timeStep = key === "PageDown" ? -1 : 1;
    } else if (key === "ArrowLeft" || key === "ArrowRight") {
      var next = index < 0 ? (key === "ArrowLeft" ? rows.length - 1 : 0)
        : index + (key === "ArrowLeft" ? -1 : 1);
      selected = rows[Math.max(0, Math.min(rows.length - 1, next))];
    } else if (key === "Home" || key === "End") {
      selected = rows[key === "Home" ? 0 : rows.length - 1];
    } else if (key === "ArrowUp" || key === "ArrowDown") {
      tokenStep = (key === "ArrowUp" ? 1 : -1) * (event.shiftKey ? edit.tokens.bigStep : edit.tokens.step);
    } else {
      return;
    }
    event.preventDefault();
    if ((timeStep || tokenStep) && index < 0) selected = rows[0];
    var anchor = anchorOf(gd, selected);
    if (!anchor) return;
    var box = null;
    if (tokenStep) {
      box = set(selected, null, clampTokens(edit, anchor.tokens + tokenStep));
    } else if (timeStep && edit.time.span) {
      /* Over a time another anchor holds, to the next free one. */
      var at = null;
      var m = minutes(anchor.at);
      var offset = (m - edit.time.origin + 1440) % 1440;
      for (var k = 1; at === null; k += 1) {
        var to = offset + timeStep * edit.time.step * k;
        if (to < 0 || to > edit.time.span) break;
        at = free(selected, wall(edit.time.origin + to));
      }
      if (at !== null) box = set(selected, at, null);
    }
    if (box) commit(selected, box);
    place(gd);
    announce(gd);
  });

  document.addEventListener("focusout", function (event) {
    if (event.target instanceof Element && event.target.id === CHART) {
      event.target.classList.remove("is-over-anchor");
    }
  });
})();
