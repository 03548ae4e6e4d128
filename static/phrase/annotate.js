// The phrase_pair annotator page: one phrase pair at a time, keys 1-7 choose one of the
// seven relations and submit it. Reversed probe copies arrive like any other item.
"use strict";

(function () {
  const el = function (id) { return document.getElementById(id); };
  const page = window.MashovAnnotatePage.create({
    show: function (data) {
      // textContent keeps the stored text exactly (trailing spaces included) and never parses markup.
      el("left").textContent = data.item.payload.left;
      el("right").textContent = data.item.payload.right;
    },
    onBusy: function (busy) {
      document.querySelectorAll(".phrase-label").forEach(function (button) { button.disabled = busy; });
    },
    nav: { skip: true, previous: true, keys: true },
  });

  function submit(button) { page.submit({ label: button.dataset.label }, window.MashovAnnotatePage.labelText(button)); }

  document.querySelectorAll(".phrase-label").forEach(function (button) {
    button.addEventListener("click", function () { submit(button); });
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) { return; }
    const digit = window.MashovAnnotatePage.digit(event);
    const key = digit !== null ? String(digit) : event.key;
    const button = document.querySelector('.phrase-label[data-key="' + key + '"]');
    if (button) {
      event.preventDefault();
      submit(button);
    }
  });
  page.loadNext();
})();
