/* The Team page's members card, kept current (the page works without it:
   a reload shows the same).

   Two things change what the card says. A boundary (a member winds down, or
   wakes): the card carries the earliest next change of the members it shows
   (data-next-ms), and is re-read then. A save or an override (a member's own,
   or the team's schedule): the server pushes it on the Team socket
   (curfew_core/realtime/team.py), which follows the members on the shown page,
   and the card is re-read. The re-read is the card's own address
   (data-team-live), through htmx, so paging and the socket stay in step. */
(function () {
  "use strict";
  var socket = null;
  var followed = null;
  var retry = 1000;
  var boundary = null;
  var soon = null;

  function card() {
    return document.getElementById("members");
  }

  function status(text) {
    var c = card();
    var slot = c ? c.querySelector("[data-live-status]") : null;
    if (slot) {
      slot.setAttribute("data-live", text);
    }
  }

  function refresh() {
    var c = card();
    if (!c || !window.htmx) {
      return;
    }
    window.htmx.ajax("GET", c.getAttribute("data-team-live"), {
      target: "#members",
      swap: "outerHTML",
    });
  }

  function refreshSoon() {
    clearTimeout(soon);
    soon = setTimeout(refresh, 150);
  }

  function armBoundary() {
    clearTimeout(boundary);
    var c = card();
    var next = c ? parseInt(c.getAttribute("data-next-ms"), 10) : NaN;
    if (isNaN(next)) {
      return;
    }
    /* A second past the change (the server's clock decides), at most an hour. */
    var wait = Math.min(Math.max(next - Date.now() + 1000, 1000), 3600 * 1000);
    boundary = setTimeout(refresh, wait);
  }

  function connect() {
    var c = card();
    if (!c || !("WebSocket" in window)) {
      return;
    }
    var page = c.getAttribute("data-page") || "1";
    if (socket && followed === page) {
      return;
    }
    if (socket) {
      socket.onclose = null;
      socket.close();
    }
    followed = page;
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + "/ws/team/?page=" + encodeURIComponent(page));
    socket.onopen = function () {
      retry = 1000;
      status("on");
    };
    socket.onmessage = refreshSoon;
    socket.onclose = function (event) {
      socket = null;
      followed = null;
      status("off");
      /* 4401 signed out, 4403 wrong origin, 4404 no longer an admin: stop. */
      if (event.code >= 4400 && event.code < 4500 && event.code !== 4429) {
        return;
      }
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    };
  }

  function start() {
    armBoundary();
    connect();
  }

  document.addEventListener("DOMContentLoaded", start);
  document.addEventListener("htmx:afterSettle", function (event) {
    if (event.target && event.target.id === "members") {
      start();
    }
  });
})();
