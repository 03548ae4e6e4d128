// The phrase_pair annotator page: one phrase pair at a time, keys 1-7 choose one of the
// seven relations and submit it. Reversed probe copies arrive like any other item.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("annotate-config").textContent);
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  let current = null;   // {assignment, item, idempotencyKey?}
  let busy = false;

  function showError(message) {
    el("error").textContent = message;
    el("error").hidden = !message;
  }

  function setBusy(value) {
    busy = value;
    document.querySelectorAll(".phrase-label").forEach(function (button) { button.disabled = value; });
  }

  async function refreshProgress() {
    const result = await api.get(config.progressUrl);
    if (result.status !== 200) { return; }
    // `remaining` counts what the caller could still claim; the pair on screen is claimed already.
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
      // textContent keeps the stored text exactly (trailing spaces included) and never parses markup.
      el("left").textContent = current.item.payload.left;
      el("right").textContent = current.item.payload.right;
      el("task").hidden = false;
      el("done").hidden = true;
      el("task").dataset.assignment = String(current.assignment);
    } else {
      showError(api.errorText(result));
    }
    // The next pair is on screen: keys work again while the progress bar catches up.
    setBusy(false);
    await refreshProgress();
  }

  async function submit(label) {
    if (!current || busy) { return; }
    setBusy(true);
    const url = config.submitUrl.replace("{id}", String(current.assignment));
    // One key per assignment: a retried click replays the first answer instead of a 409.
    const key = current.idempotencyKey || (current.idempotencyKey = api.newKey());
    let result;
    try {
      result = await api.post(url, { value: { label: label } }, { "Idempotency-Key": key });
    } catch (e) {
      setBusy(false);
      showError(String(e));
      return;
    }
    if (result.status === 201 || result.status === 409) {
      // 409: already submitted or the claim was taken over; either way move on.
      await loadNext();
    } else {
      setBusy(false);
      showError(api.errorText(result));
    }
  }

  document.querySelectorAll(".phrase-label").forEach(function (button) {
    button.addEventListener("click", function () { submit(button.dataset.label); });
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) { return; }
    // event.code too: on a Persian or Arabic layout the digit keys type ۱..۷ / ١..٧.
    const code = /^(?:Digit|Numpad)([1-7])$/.exec(event.code || "");
    const key = code ? code[1] : event.key;
    const button = document.querySelector('.phrase-label[data-key="' + key + '"]');
    if (button) {
      event.preventDefault();
      submit(button.dataset.label);
    }
  });
  loadNext();
})();
