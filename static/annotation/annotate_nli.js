// The nli_relabel / label_test annotator page: one item at a time, keys 1-3 label and submit.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("annotate-config").textContent);
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  let current = null;   // {assignment, item}
  let busy = false;

  function showError(message) {
    el("error").textContent = message;
    el("error").hidden = !message;
  }

  async function refreshProgress() {
    const result = await api.get(config.progressUrl);
    if (result.status !== 200) { return; }
    // `remaining` counts what the caller could still claim; the item on screen is claimed already.
    const total = result.data.done + result.data.remaining + (current ? 1 : 0);
    el("progress").max = Math.max(1, total);
    el("progress").value = result.data.done;
    el("progress-text").textContent = result.data.done + " / " + total;
  }

  async function loadNext() {
    showError("");
    const result = await api.get(config.nextUrl);
    if (result.status === 204) {
      current = null;
      el("task").hidden = true;
      el("done").hidden = false;
    } else if (result.status === 200) {
      current = result.data;
      // textContent keeps the stored text exactly and never interprets it as markup.
      el("premise").textContent = current.item.payload.premise;
      el("hypothesis").textContent = current.item.payload.hypothesis;
      el("task").hidden = false;
      el("done").hidden = true;
      el("task").dataset.assignment = String(current.assignment);
    } else {
      showError(api.errorText(result));
    }
    await refreshProgress();
  }

  async function submit(label) {
    if (!current || busy) { return; }
    busy = true;
    const url = config.submitUrl.replace("{id}", String(current.assignment));
    const key = current.idempotencyKey || (current.idempotencyKey = api.newKey());
    const result = await api.post(url, { value: { label: label } }, { "Idempotency-Key": key });
    busy = false;
    if (result.status === 201 || result.status === 409) {
      // 409: already submitted or the claim was taken over; either way move on.
      await loadNext();
    } else {
      showError(api.errorText(result));
    }
  }

  document.querySelectorAll(".label-button").forEach(function (button) {
    button.addEventListener("click", function () { submit(button.dataset.label); });
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    // The physical key, so that 1-3 work on Hebrew and Persian layouts too (a Persian
    // layout types "۱" for the key Digit1).
    const digit = /^(?:Digit|Numpad)([0-9])$/.exec(event.code || "");
    const key = digit ? digit[1] : event.key;
    const button = document.querySelector('.label-button[data-key="' + key + '"]');
    if (button) {
      event.preventDefault();
      submit(button.dataset.label);
    }
  });
  loadNext();
})();
