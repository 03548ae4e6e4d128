// The loop every annotator page shares, built on MashovApi (api.js, loaded first): read the
// json_script config, GET the next item (200 show it, 204 "nothing left", else the error
// text), POST the answer with one Idempotency-Key per assignment, move on, and keep the
// progress bar and the error box up to date. Each page keeps its own rendering and keys:
//
//   const page = MashovAnnotatePage.create({ show: function (data) { ... } });
//   ... page.submit(value) on a click or a key ...
//   page.loadNext();
//
// The template (annotate_base.html) provides #task, #done, #error, #progress and
// #progress-text, and the config {nextUrl, submitUrl ("{id}" for the assignment), progressUrl?}.
// With `preview: true` (the console's "preview as annotator") nextUrl is the preview endpoint,
// which claims nothing; a submit sends nothing, says so (previewNotice) and shows the next item.
"use strict";

window.MashovAnnotatePage = (function () {
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };

  // options:
  //   show(data)       render the item from /next/ ({assignment, item, ...}); #task is already
  //                    visible, and a submit that led here stays busy until show returns.
  //   onBusy(busy)     optional: a submit started (true) or ended (false); busy lasts from the
  //                    POST until the next item is shown or an error is.
  //   configId         json_script id, "annotate-config" by default.
  //   doneId           the "nothing left" box, "done" by default.
  //   assignmentOn     id of the element that gets data-assignment, "task" by default; null: none.
  //   skipOnConflict   fields of a 409 that mean "answered already or taken over: move on";
  //                    ["assignment"] by default. Any other 409 is shown as an error.
  function create(options) {
    const config = JSON.parse(el(options.configId || "annotate-config").textContent);
    const doneId = options.doneId || "done";
    const assignmentOn = options.assignmentOn === undefined ? "task" : options.assignmentOn;
    const skipOnConflict = options.skipOnConflict || ["assignment"];
    let current = null;   // the /next/ body on screen, plus its idempotencyKey once submitted
    let busy = false;

    function showError(text) {
      el("error").textContent = text;
      el("error").hidden = !text;
    }

    function setBusy(value) {
      if (busy === value) { return; }
      busy = value;
      if (options.onBusy) { options.onBusy(value); }
    }

    async function refreshProgress() {
      if (!config.progressUrl) { return; }
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
      let result;
      const url = config.preview && current ? config.nextUrl + "?after=" + encodeURIComponent(current.item.id) : config.nextUrl;
      try {
        result = await api.get(url);
      } catch (e) {
        result = { status: 0, data: null };
      }
      if (result.status === 204) {
        current = null;
        el("task").hidden = true;
        el(doneId).hidden = false;
      } else if (result.status === 200) {
        current = result.data;
        el("task").hidden = false;
        el(doneId).hidden = true;
        if (assignmentOn) { el(assignmentOn).dataset.assignment = String(current.assignment); }
        options.show(current);
      } else {
        showError(errorText(result));
      }
      // The next item is on screen: keys work again while the progress bar catches up.
      setBusy(false);
      await refreshProgress();
    }

    function errorText(result) {
      return result.status === 0 ? (config.networkError || "Network error") : api.errorText(result);
    }

    function movesOn(result) {
      if (result.status === 201) { return true; }
      const errors = (result.data && Array.isArray(result.data.errors)) ? result.data.errors : [];
      return result.status === 409 && errors.some(function (e) { return skipOnConflict.indexOf(e.field) !== -1; });
    }

    // POST `body` as it is for the item on screen; resolves to the response ({status, data};
    // status 0 when the network failed), or null when nothing was sent (no item, or busy).
    async function send(body) {
      if (!current || busy) { return null; }
      if (config.preview) {
        // Nothing is sent: the preview stores nothing. The next item follows, as after a submit.
        el("preview-note").textContent = config.previewNotice;
        setBusy(true);
        await loadNext();
        return null;
      }
      setBusy(true);
      const url = config.submitUrl.replace("{id}", String(current.assignment));
      // One key per assignment: a retried click replays the first answer instead of a 409.
      const key = current.idempotencyKey || (current.idempotencyKey = api.newKey());
      let result;
      try {
        result = await api.post(url, body, { "Idempotency-Key": key });
      } catch (e) {
        result = { status: 0, data: null };
      }
      if (movesOn(result)) {
        current = null;
        await loadNext();
      } else {
        setBusy(false);
        showError(errorText(result));
      }
      return result;
    }

    return {
      config: config,
      current: function () { return current; },
      busy: function () { return busy; },
      loadNext: loadNext,
      showError: showError,
      send: send,
      submit: function (value) { return send({ value: value }); },
    };
  }

  // The digit of the physical key (Digit0-9, Numpad0-9) or null, so that shortcuts work on
  // Hebrew and Persian layouts too (a Persian layout types "۱" for the key Digit1).
  function digit(event) {
    const match = /^(?:Digit|Numpad)([0-9])$/.exec(event.code || "");
    return match ? Number(match[1]) : null;
  }

  return { create: create, digit: digit };
})();
