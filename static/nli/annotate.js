// The nli_relabel / label_test annotator page: one item at a time, keys 1-3 label and submit.
"use strict";

(function () {
  const el = function (id) { return document.getElementById(id); };
  const page = window.MashovAnnotatePage.create({
    show: function (data) {
      // textContent keeps the stored text exactly and never interprets it as markup.
      el("premise").textContent = data.item.payload.premise;
      el("hypothesis").textContent = data.item.payload.hypothesis;
    },
    nav: { skip: true, previous: true, keys: true },
  });

  function submit(button) { page.submit({ label: button.dataset.label }, window.MashovAnnotatePage.labelText(button)); }

  document.querySelectorAll(".label-button").forEach(function (button) {
    button.addEventListener("click", function () { submit(button); });
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    const digit = window.MashovAnnotatePage.digit(event);
    const key = digit !== null ? String(digit) : event.key;
    const button = document.querySelector('.label-button[data-key="' + key + '"]');
    if (button) {
      event.preventDefault();
      submit(button);
    }
  });
  page.loadNext();
})();
