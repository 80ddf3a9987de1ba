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

  document.addEventListener("DOMContentLoaded", arm);
  document.addEventListener("htmx:afterSettle", function () {
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
