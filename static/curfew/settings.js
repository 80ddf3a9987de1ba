/* The settings page's script: draws the Plotly chart from its JSON data block,
   adds/removes/sorts editable rows and fills persona presets. The page works
   without it (server-rendered first); this only makes it live. No inline
   script anywhere: data arrives in <script type="application/json"> blocks. */
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  var drawCount = 0;

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  /* Colours come from the stylesheet, so the chart follows light/dark mode. */
  function theme(figure) {
    var fg = cssVar("--fg");
    var muted = cssVar("--fg-muted");
    var grid = cssVar("--chart-grid");
    var now = cssVar("--chart-now");
    var layout = figure.layout;
    layout.font = { family: cssVar("--font"), color: fg, size: 12 };
    ["xaxis", "yaxis"].forEach(function (axis) {
      layout[axis].gridcolor = grid;
      layout[axis].linecolor = grid;
      layout[axis].zerolinecolor = grid;
      layout[axis].tickfont = { color: muted };
    });
    (layout.annotations || []).forEach(function (note) {
      note.font = { color: fg, size: 12 };
    });
    (layout.shapes || []).forEach(function (shape) {
      if (shape.name === "night") {
        shape.fillcolor = cssVar("--c-night");
        shape.opacity = 0.22;
      } else if (shape.name === "night-line") {
        shape.line.color = cssVar("--c-night");
      } else if (shape.name === "now-line") {
        shape.line.color = now;
      }
    });
    figure.data.forEach(function (trace, index) {
      if (index === 0) {
        trace.line.color = cssVar("--chart-line");
        trace.fillcolor = cssVar("--chart-fill");
      } else if (trace.meta === "with-team") {
        /* A member's second line: what gateways get with the team's night
           (charts.py), dashed in the text colour, readable light or dark. */
        trace.line.color = fg;
      } else if (trace.meta === "anchors-ignored") {
        /* Anchors the curve shape ignores: hollow and grey (charts.py). */
        trace.marker.color = muted;
        trace.marker.line.color = muted;
      } else if (trace.mode === "markers") {
        trace.marker.color = cssVar("--c-curve");
        trace.marker.line.color = fg;
      } else {
        trace.marker.color = now;
        trace.marker.line.color = now;
        trace.textfont = { color: now, size: 12 };
      }
    });
    layout.hoverlabel = { bgcolor: cssVar("--bg-raised"), bordercolor: grid, font: { color: fg } };
    return figure;
  }

  /* Hour ticks at least this far apart on screen: a phone (390 px) fits
     about four of the server's up to ten labels ("22:00" is ~35 px wide). */
  var TICK_SPACING_PX = 72;

  /* Fewer hour ticks on a narrow chart: every second (third, ...) of the
     server's ticks, so labels keep their room; a wide chart keeps them all. */
  function thinTicks(layout, width) {
    var axis = layout.xaxis, margin = layout.margin || {};
    var vals = axis.tickvals, text = axis.ticktext;
    if (!vals || vals.length < 2 || !width) return;
    var plot = width - (margin.l || 0) - (margin.r || 0);
    if (plot <= 0) return;
    var span = axis.range ? axis.range[1] - axis.range[0] : vals[vals.length - 1] - vals[0];
    var apart = (vals[1] - vals[0]) * plot / span;
    var every = Math.max(1, Math.ceil(TICK_SPACING_PX / apart));
    if (every === 1) return;
    axis.tickvals = vals.filter(function (_, i) { return i % every === 0; });
    axis.ticktext = text.filter(function (_, i) { return i % every === 0; });
  }

  function draw(root) {
    if (!window.Plotly) return;
    var charts = [];
    if (root.matches && root.matches("[data-figure]")) charts.push(root);
    root.querySelectorAll("[data-figure]").forEach(function (el) { charts.push(el); });
    charts.forEach(function (el) {
      var source = document.getElementById(el.getAttribute("data-figure"));
      if (!source) return;
      var figure = theme(JSON.parse(source.textContent));
      thinTicks(figure.layout, el.clientWidth);
      window.Plotly.react(el, figure.data, figure.layout, {
        displayModeBar: false,
        responsive: true,
      }).then(function () {
        drawCount += 1;
        el.setAttribute("data-drawn", String(drawCount));
        /* curve-drag.js listens: it re-attaches to each drawn chart. */
        el.dispatchEvent(new CustomEvent("figure-drawn", { bubbles: true }));
      });
    });
  }

  function redrawAll() { draw(document); }

  if (window.htmx) {
    window.htmx.onLoad(draw);
  } else {
    document.addEventListener("DOMContentLoaded", redrawAll);
  }
  if (window.matchMedia) {
    var scheme = window.matchMedia("(prefers-color-scheme: dark)");
    if (scheme.addEventListener) scheme.addEventListener("change", redrawAll);
  }
  /* A phone turned sideways (or a window resized) has room for other ticks.
     Only a new width redraws: a phone's toolbar hiding on scroll changes the
     height alone. */
  var resizing = null, drawnWidth = window.innerWidth;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      if (window.innerWidth === drawnWidth) return;
      drawnWidth = window.innerWidth;
      redrawAll();
    }, 250);
  });

  /* ---- editable rows ---------------------------------------------------- */
  function changed(el) {
    var form = el.closest("form");
    if (form && window.htmx) window.htmx.trigger(form, "rows-changed");
  }

  /* Rows are a Django formset: after adding, removing or sorting, the
     boxes are named <prefix>-<index>-<column> again in page order and the
     formset's TOTAL_FORMS says how many there are. */
  function renumber(rows) {
    var items = rows.querySelectorAll("[data-row]");
    var prefix = null;
    items.forEach(function (row, index) {
      row.querySelectorAll("input[name]").forEach(function (input) {
        var match = /^(.+)-(\d+|__prefix__)-([^-]+)$/.exec(input.name);
        if (!match) return;
        prefix = match[1];
        input.name = prefix + "-" + index + "-" + match[3];
        input.id = "id_" + input.name;
      });
      var message = row.querySelector(".row-msg");
      if (message) message.id = "anchor-msg-" + index;
    });
    var form = rows.closest("form");
    var total = prefix && form && form.querySelector('input[name="' + prefix + '-TOTAL_FORMS"]');
    if (total) total.value = String(items.length);
  }

  function minutes(text) {
    var match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec((text || "").trim());
    return match ? Number(match[1]) * 60 + Number(match[2]) : null;
  }

  /* Order anchors by time through the night (23:00 before 00:00); the server
     stores them in that order too. Blank or unreadable rows go last. */
  function sortRows(rows) {
    var start = minutes((document.getElementById("f-curfew_start") || {}).value) || 0;
    var items = Array.prototype.slice.call(rows.querySelectorAll("[data-row]"));
    items.sort(function (a, b) {
      var ma = minutes(a.querySelector("input").value);
      var mb = minutes(b.querySelector("input").value);
      var ka = ma === null ? Infinity : (ma - start + 1440) % 1440;
      var kb = mb === null ? Infinity : (mb - start + 1440) % 1440;
      return ka - kb;
    });
    items.forEach(function (row) { rows.appendChild(row); });
    renumber(rows);
  }

  /* ---- the wind-down follows the night -------------------------------------
     Moving "Gets sleepy at" or "Asleep at" moves every anchor with it: each
     keeps its place as a fraction of the window and lands on the nearest
     whole minute, the same arithmetic as the server's curve.stretch (so the
     save gives what the table shows). The shape is the one last saved, or
     the one last placed by hand under "Shape it yourself". A window too short
     for every anchor is left to the server, which folds anchors together. */
  var shape = null;

  function nightBox(name) { return document.getElementById("f-" + name); }

  function anchorRows() {
    return Array.prototype.slice.call(document.querySelectorAll("#anchor-rows [data-row]"));
  }

  function anchorTime(row) { return row.querySelector("input[name$='-time']"); }

  function span(from, to) { return (to - from + 1440) % 1440; }

  function takeShape(saved) {
    var start = nightBox("curfew_start");
    var lights = nightBox("lights_out");
    var rows = anchorRows().filter(function (row) {
      return (saved ? anchorTime(row).defaultValue : anchorTime(row).value).trim() !== "";
    });
    shape = null;
    if (!start || !lights || !rows.length) return;
    var origin = minutes(saved ? start.defaultValue : start.value);
    var end = minutes(saved ? lights.defaultValue : lights.value);
    var times = rows.map(function (row) {
      return minutes(saved ? anchorTime(row).defaultValue : anchorTime(row).value);
    });
    if (origin === null || end === null || times.indexOf(null) >= 0) return;
    var width = span(origin, end);
    if (width === 0) {
      /* No window: the anchors' own span stands in (the engine's rule). */
      origin = times[0];
      width = span(origin, times[times.length - 1]);
    }
    shape = {
      saved: saved,
      rows: rows.map(function (row, index) {
        return { row: row, at: width ? span(origin, times[index]) / width : 0 };
      }),
    };
  }

  function followNight() {
    if (!shape) return;
    var origin = minutes(nightBox("curfew_start").value);
    var end = minutes(nightBox("lights_out").value);
    if (origin === null || end === null) return;
    var width = span(origin, end);
    if (width === 0) return;
    var seen = {};
    var offsets = shape.rows.map(function (item) { return Math.floor(item.at * width + 0.5); });
    for (var i = 0; i < offsets.length; i += 1) {
      if (seen[offsets[i]]) return;
      seen[offsets[i]] = true;
    }
    shape.rows.forEach(function (item, index) {
      var box = anchorTime(item.row);
      if (!document.contains(box)) return;
      var total = (origin + offsets[index]) % 1440;
      var hours = Math.floor(total / 60);
      var mins = total % 60;
      box.value = (hours < 10 ? "0" : "") + hours + ":" + (mins < 10 ? "0" : "") + mins;
    });
    var container = document.getElementById("anchor-rows");
    /* The table moved with the night: not an edit of its own (unsaved count). */
    if (container) container.toggleAttribute("data-following", shape.saved);
  }

  document.addEventListener("input", function (event) {
    var target = event.target;
    if (!(target instanceof Element)) return;
    var night = /^f-(curfew_start|lights_out|wake_up)$/.exec(target.id);
    if (night && minutes(target.value) !== null) {
      /* An empty day box stands for this time: it says so as it changes. */
      document.querySelectorAll("input[name^='wg_'], input[name^='wd_']").forEach(function (box) {
        if (box.name.slice(-night[1].length) === night[1]) box.placeholder = target.value.trim();
      });
    }
    if (target.id === "f-curfew_start" || target.id === "f-lights_out") {
      followNight();
    } else if (target.closest("#anchor-rows")) {
      /* Placed by hand: this is the shape the night now carries. */
      document.getElementById("anchor-rows").removeAttribute("data-following");
      takeShape(false);
    }
  }, true);
  document.addEventListener("rows-changed", function (event) {
    if (event.target instanceof Element && event.target.querySelector("#anchor-rows")) {
      var container = document.getElementById("anchor-rows");
      if (container) container.removeAttribute("data-following");
      takeShape(false);
    }
  });
  function shapeFromSaved(root) {
    if (root.querySelector && (root.id === "schedule-form" || root.querySelector("#schedule-form"))) {
      takeShape(true);
    }
  }
  if (window.htmx) {
    window.htmx.onLoad(shapeFromSaved);
  } else {
    document.addEventListener("DOMContentLoaded", function () { shapeFromSaved(document); });
  }

  /* A preset's texts into their fields (f-<setting>); the same texts a
     post without script fills in (web/schedule/presets.py). */
  function fillPreset(source, code) {
    var table = document.getElementById(source);
    if (!table) return false;
    var texts = JSON.parse(table.textContent)[code];
    if (!texts) return false;
    Object.keys(texts).forEach(function (setting) {
      document.getElementById("f-" + setting).value = texts[setting];
    });
    return true;
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!(target instanceof Element)) return;
    var add = target.closest("[data-add-row]");
    if (add) {
      var kind = add.getAttribute("data-add-row");
      var rows = document.querySelector('[data-rows="' + kind + '"]');
      var template = document.getElementById(kind + "-row-template");
      if (!rows || !template) return;
      var row = template.content.firstElementChild.cloneNode(true);
      rows.appendChild(row);
      renumber(rows);
      row.querySelector("input").focus();
      changed(rows);
      return;
    }
    var remove = target.closest("[data-remove-row]");
    if (remove) {
      var container = remove.closest("[data-rows]");
      var next = remove.closest("[data-row]").nextElementSibling;
      remove.closest("[data-row]").remove();
      renumber(container);
      var focusable = (next || container).querySelector("input");
      if (focusable) focusable.focus();
      changed(container);
      return;
    }
    var sort = target.closest("[data-sort-rows]");
    if (sort) {
      var sortable = document.querySelector('[data-rows="' + sort.getAttribute("data-sort-rows") + '"]');
      if (sortable) {
        sortRows(sortable);
        changed(sortable);
      }
      return;
    }
    var replyPreset = target.closest("[data-reply-preset]");
    if (replyPreset && fillPreset("reply-presets", replyPreset.getAttribute("data-reply-preset"))) {
      /* Filled in, not saved, as the persona presets. */
      event.preventDefault();
      changed(replyPreset);
      return;
    }
    var preset = target.closest("[data-preset]");
    if (preset && fillPreset("persona-presets", preset.getAttribute("data-preset"))) {
      /* Filled in, not saved: the form's Save button does that. */
      event.preventDefault();
      changed(preset);
      return;
    }
    var copy = target.closest("[data-copy]");
    if (copy) {
      var input = document.querySelector(copy.getAttribute("data-copy"));
      if (!input) return;
      input.select();
      if (navigator.clipboard) {
        navigator.clipboard.writeText(input.value).then(function () {
          copy.textContent = "✓";
        }, function () { /* selected; the person can copy it by hand */ });
      }
    }
  });
  /* ---- unsaved changes ----------------------------------------------------
     Each section form is compared with what was last saved, by setting (an
     anchor table or the weekday times count as one). The save bar shows only
     when something differs ("2 unsaved changes"), and leaving the page then
     asks first. A form that comes back saved (a fresh page, or htmx after a
     save) is the new baseline; one that comes back refused keeps the old. */
  var baselines = {};
  var leaving = false;

  function group(name) {
    var match = /^(anchors|peak)-/.exec(name);
    if (match) return match[1];
    if (/^wd_/.test(name)) return "weekdays";
    return name;
  }

  function snapshot(form) {
    var map = {};
    new FormData(form).forEach(function (value, name) {
      if (name === "csrfmiddlewaretoken" || name === "version") return;
      var key = group(name);
      map[key] = (map[key] || "") + "&" + name + "=" + value;
    });
    return map;
  }

  function changedCount(form) {
    var base = baselines[form.id];
    if (!base) return 0;
    var now = snapshot(form);
    var keys = {};
    Object.keys(base).concat(Object.keys(now)).forEach(function (key) { keys[key] = true; });
    var following = form.querySelector("#anchor-rows[data-following]");
    return Object.keys(keys).filter(function (key) {
      return base[key] !== now[key] && !(following && key === "anchors");
    }).length;
  }

  function showDirty(form) {
    var bar = form.querySelector("[data-savebar]");
    var status = form.querySelector("[data-dirty-status]");
    if (!bar || !status) return;
    var count = changedCount(form);
    bar.classList.toggle("is-dirty", count > 0);
    form.toggleAttribute("data-dirty", count > 0);
    status.textContent = count === 1 ? status.getAttribute("data-one")
      : count > 1 ? status.getAttribute("data-many").replace("{n}", String(count)) : "";
  }

  function watch(root) {
    var forms = [];
    if (root.matches && root.matches("form[data-dirty-watch]")) forms.push(root);
    root.querySelectorAll("form[data-dirty-watch]").forEach(function (form) { forms.push(form); });
    forms.forEach(function (form) {
      if (form.hasAttribute("data-baseline") || !baselines[form.id]) {
        baselines[form.id] = snapshot(form);
      }
      showDirty(form);
    });
  }

  if (window.htmx) {
    window.htmx.onLoad(watch);
  } else {
    document.addEventListener("DOMContentLoaded", function () { watch(document); });
  }
  ["input", "change", "rows-changed"].forEach(function (type) {
    document.addEventListener(type, function (event) {
      var form = event.target instanceof Element && event.target.closest("form[data-dirty-watch]");
      if (form) showDirty(form);
    });
  });
  document.addEventListener("submit", function () { leaving = true; });
  /* A request htmx made stays on the page: whatever follows is guarded again. */
  document.addEventListener("htmx:afterRequest", function () { leaving = false; });
  document.addEventListener("click", function (event) {
    if (event.target instanceof Element && event.target.closest("[data-discard]")) leaving = true;
  });
  window.addEventListener("beforeunload", function (event) {
    if (leaving) return;
    if (document.querySelector("form[data-dirty]")) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
})();
