/* The Activity section's script: draws the ledger chart from its JSON data
   block (no inline script: the data arrives in <script type="application/json">),
   again after each htmx swap of the ledger card. The page works without it:
   the totals, the key under the chart and the decisions are server-rendered. */
(function () {
  "use strict";

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  /* How much of its state's colour each action is drawn with (the rest is
     the card's background): what went through is pale, what the curfew cut is
     solid. Mixed into a colour of its own, not drawn with opacity: Plotly's
     legend ignores a trace's opacity, and "passed" and "answered without a
     request" of one state then showed the same swatch. */
  var SHARE = { "pass": 0.35, "clamp": 0.68, "short-circuit": 1, "refused": 1 };

  function rgb(colour) {
    var hex = /^#([0-9a-f]{6})$/i.exec(colour);
    if (hex) {
      var n = parseInt(hex[1], 16);
      return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
    }
    var fn = /^rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(colour);
    return fn ? [+fn[1], +fn[2], +fn[3]] : null;
  }

  function mix(colour, ground, share) {
    var a = rgb(colour);
    var b = rgb(ground);
    if (!a || !b || share >= 1) return colour;
    var out = a.map(function (value, i) { return Math.round(value * share + b[i] * (1 - share)); });
    return "rgb(" + out.join(", ") + ")";
  }

  /* Colours come from the stylesheet (states.css), so the chart follows
     light/dark mode and matches the band's state colours. */
  function theme(figure) {
    var fg = cssVar("--fg");
    var muted = cssVar("--fg-muted");
    var grid = cssVar("--chart-grid");
    var ground = cssVar("--bg-raised") || "#ffffff";
    var layout = figure.layout;
    layout.font = { family: cssVar("--font"), color: fg, size: 12 };
    ["xaxis", "yaxis"].forEach(function (axis) {
      layout[axis].gridcolor = grid;
      layout[axis].linecolor = grid;
      layout[axis].zerolinecolor = grid;
      layout[axis].tickfont = { color: muted };
    });
    (layout.annotations || []).forEach(function (note) {
      note.font = { color: muted, size: 13 };
    });
    figure.data.forEach(function (trace) {
      var meta = trace.meta || {};
      var colour = cssVar("--c-" + meta.state) || muted;
      if (meta.action === "dry-run") {
        /* Decided, never acted on: hatched, not filled. */
        trace.marker = {
          color: "rgba(0,0,0,0)",
          pattern: { shape: "/", fgcolor: colour, bgcolor: "rgba(0,0,0,0)", solidity: 0.35 },
          line: { width: 1, color: colour },
        };
        return;
      }
      if (meta.action === "refused") {
        /* Refused, not answered: the state's colour, cross-hatched. */
        trace.marker = {
          color: colour,
          pattern: { shape: "x", fgcolor: ground, solidity: 0.3 },
          line: { width: 0 },
        };
        return;
      }
      trace.marker = {
        color: mix(colour, ground, SHARE[meta.action] || 1),
        line: { width: 0 },
      };
    });
    layout.hoverlabel = { bgcolor: cssVar("--bg-raised"), bordercolor: grid, font: { color: fg } };
    return figure;
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
      window.Plotly.react(el, figure.data, figure.layout, {
        displayModeBar: false,
        responsive: true,
      }).then(function () {
        el.setAttribute("data-drawn", "1");
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
})();
