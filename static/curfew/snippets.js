/* Integrations: a Copy button beside each setup snippet copies the snippet's
   text (data-copy-text names its element). Without script the buttons are
   hidden (.js-only) and the snippets are plain text to select by hand. If the
   clipboard is refused, the text is selected so the person can copy it. */
(function () {
  "use strict";

  function selectText(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function done(button, label) {
    button.textContent = label;
    button.classList.add("is-copied");
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-text]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy-text"));
    if (!source) return;
    var copied = button.getAttribute("data-copied") || "✓";
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(source.textContent).then(function () {
        done(button, copied);
      }, function () { selectText(source); });
    } else {
      selectText(source);
      try {
        if (document.execCommand("copy")) done(button, copied);
      } catch (error) { /* selected; the person copies it by hand */ }
    }
  });
})();
