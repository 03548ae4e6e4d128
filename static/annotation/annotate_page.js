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
//
// Besides (options.nav): a skip button and key (S by physical key) that releases the claim
// and moves on; a "previous" key (Backspace) that walks back through the caller's own
// answers (GET mineUrl), shows one with its label marked and, while its round is open, lets
// a label key change it (PATCH editUrl), then returns to the claim on screen (Escape does
// too); and a flash of the chosen label on every submit, so that a slip is seen.
// Nothing is dropped without a word: while an answer is being sent and the next item fetched,
// #busy-note says so, and a choice made meanwhile is refused there visibly (it would land on
// an item not yet on screen). An answer refused because the session ended (401) is kept in
// sessionStorage for this page; after the login brings the annotator back it is sent again
// with its Idempotency-Key (the server decides whether the claim still permits it) and the
// page says how that went.
// Input on the page (a key, a press, typing) renews the claim (heartbeatUrl, see below).
// With `preview: true` (the console's "preview as annotator") nextUrl is the preview endpoint,
// which claims nothing; a submit sends nothing, says so (previewNotice) and shows the next item.
"use strict";

window.MashovAnnotatePage = (function () {
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  const FLASH_MS = 1200;    // how long the chosen label stays up
  const HISTORY_PAGE = 20;  // earlier answers fetched at a time
  const PENDING_KEY = "mashov-pending-answer";  // sessionStorage: {path, url, body, key}

  // What this page kept under `key` in sessionStorage before the login page (it is taken:
  // removed), or null when there is none or it was kept by another page.
  function takeKept(key) {
    let kept = null;
    try {
      kept = JSON.parse(window.sessionStorage.getItem(key) || "null");
      window.sessionStorage.removeItem(key);
    } catch (e) {
      return null;
    }
    return kept && kept.path === window.location.pathname ? kept : null;
  }

  function pendingTake() {
    return takeKept(PENDING_KEY);
  }

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
  //   nav              optional {skip, previous, keys}: show the skip button, enable the
  //                    previous key (label pages whose value is {label}), and the S /
  //                    Backspace / Escape keys (pages without free-text focus traps).
  function create(options) {
    const config = JSON.parse(el(options.configId || "annotate-config").textContent);
    const doneId = options.doneId || "done";
    const assignmentOn = options.assignmentOn === undefined ? "task" : options.assignmentOn;
    const skipOnConflict = options.skipOnConflict || ["assignment"];
    const nav = options.nav || {};
    let current = null;   // the /next/ body on screen, plus its idempotencyKey once submitted
    let busy = false;
    let history = null;   // {entries: /mine/ results so far, next: URL of the next page, index}
    let editing = null;   // the /mine/ entry shown instead of the claim ("previous")
    let flashTimer = null;

    function message(id) {
      const node = el(id);
      return node ? node.textContent : "";
    }

    // The chosen label, shown for a moment over whatever comes next.
    function flash(text) {
      const box = el("flash");
      if (!box || !text) { return; }
      box.textContent = text;
      box.hidden = false;
      clearTimeout(flashTimer);
      flashTimer = setTimeout(function () { box.hidden = true; box.textContent = ""; }, FLASH_MS);
    }

    function markChosen(label) {
      document.querySelectorAll(".label-button[data-label]").forEach(function (button) {
        if (label === null) { button.removeAttribute("aria-pressed"); return; }
        button.setAttribute("aria-pressed", button.dataset.label === label ? "true" : "false");
      });
    }

    function showBanner(entry) {
      const banner = el("previous-banner");
      if (!banner) { return; }
      banner.hidden = !entry;
      el("task").classList.toggle("previous-mode", Boolean(entry));
      if (entry) {
        el("previous-text").textContent = message(entry.editable ? "msg-previous-editable" : "msg-previous-decided");
        banner.classList.toggle("decided", !entry.editable);
      }
    }

    function refreshNav() {
      if (el("annotate-nav")) { el("annotate-nav").hidden = !(nav.skip || nav.previous); }
      if (el("skip-button")) { el("skip-button").hidden = !nav.skip || !current || Boolean(editing); }
      if (el("previous-button")) { el("previous-button").hidden = !nav.previous; }
    }

    function showError(text) {
      el("error").textContent = text;
      el("error").hidden = !text;
    }

    function setBusy(value) {
      if (busy === value) { return; }
      busy = value;
      const note = el("busy-note");
      if (note) {
        note.textContent = value ? message("msg-busy") : "";
        note.classList.remove("refused");
        note.hidden = !value;
      }
      if (el("task")) { el("task").setAttribute("aria-busy", value ? "true" : "false"); }
      if (options.onBusy) { options.onBusy(value); }
    }

    // A choice made while the last answer is still on its way: refused, and said so.
    function refuseBusy() {
      const note = el("busy-note");
      if (!note) { return null; }
      note.textContent = message("msg-busy-refused");
      note.classList.add("refused");
      note.hidden = false;
      return null;
    }

    // The submit refused by an ended session is kept for after the login (see the top).
    api.beforeLogin(function (request) {
      if (request.method !== "POST" || !current || !current.idempotencyKey) { return; }
      if (request.url !== config.submitUrl.replace("{id}", String(current.assignment))) { return; }
      try {
        window.sessionStorage.setItem(PENDING_KEY, JSON.stringify({
          path: window.location.pathname, url: request.url, body: request.body, key: current.idempotencyKey,
        }));
      } catch (e) { /* storage full or off: nothing more can be kept */ }
    });

    async function resendPending() {
      const pending = pendingTake();
      if (!pending) { return; }
      let result;
      try {
        result = await api.post(pending.url, pending.body, { "Idempotency-Key": pending.key });
      } catch (e) {
        result = { status: 0, data: null };
      }
      if (result.status === 201 || result.status === 200) {
        flash(message("msg-resent"));
      } else if (result.status !== 401) {
        showError(message("msg-resend-failed") + " " + errorText(result));
      }
    }
    let resend = resendPending();

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
      if (resend) { const first = resend; resend = null; await first; } else { showError(""); }
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
        showCurrent();
      } else {
        showError(errorText(result));
      }
      refreshNav();
      // The next item is on screen: keys work again while the progress bar catches up.
      setBusy(false);
      await refreshProgress();
    }

    function showCurrent() {
      el("task").hidden = false;
      el(doneId).hidden = true;
      if (assignmentOn) { el(assignmentOn).dataset.assignment = String(current.assignment); }
      options.show(current);
      showSuggestion(current.suggestion);
    }

    // A model's suggestion (the project's `suggestions` setting), named as the page's label
    // button names it, with its probability when the predictions have scores.
    function showSuggestion(suggestion) {
      const box = el("suggestion");
      if (!box) { return; }
      box.hidden = !suggestion;
      if (!suggestion) { return; }
      let name = suggestion.label;
      document.querySelectorAll(".label-button[data-label]").forEach(function (button) {
        if (button.dataset.label === suggestion.label) {
          // The button's label words: its <strong> where it also holds a definition, else
          // its words without the key (<kbd>).
          const strong = button.querySelector("strong");
          name = strong ? strong.textContent.trim() : Array.from(button.childNodes).filter(function (node) { return node.nodeName !== "KBD"; })
            .map(function (node) { return node.textContent; }).join("").trim() || name;
        }
      });
      el("suggestion-label").textContent = name;
      el("suggestion-probability").textContent = typeof suggestion.probability === "number"
        ? "(" + Math.round(suggestion.probability * 100) + "%)" : "";
    }

    // Back from an earlier answer to the claim (or to "nothing left").
    async function backToCurrent() {
      editing = null;
      history = null;
      showBanner(null);
      markChosen(null);
      showError("");
      if (current) {
        showCurrent();
        refreshNav();
      } else {
        await loadNext();
      }
    }

    // One step further back through the caller's answers, newest first.
    async function previous() {
      if (busy) { refuseBusy(); return; }
      if (!config.mineUrl) { return; }
      showError("");
      if (history === null) { history = { entries: [], next: config.mineUrl + "?page_size=" + HISTORY_PAGE, index: -1 }; }
      const wanted = history.index + 1;
      if (wanted >= history.entries.length && history.next) {
        const result = await api.get(history.next);
        if (result.status !== 200) { showError(errorText(result)); return; }
        history.entries = history.entries.concat(result.data.results);
        history.next = result.data.next;
      }
      if (wanted >= history.entries.length) { showError(message("msg-no-earlier")); return; }
      history.index = wanted;
      editing = history.entries[wanted];
      el("task").hidden = false;
      el(doneId).hidden = true;
      if (assignmentOn) { el(assignmentOn).dataset.annotation = String(editing.annotation); }
      options.show({ assignment: null, item: editing.item, previous: editing });
      markChosen(editing.value && typeof editing.value.label === "string" ? editing.value.label : null);
      showBanner(editing);
      refreshNav();
    }

    // A label chosen for an earlier answer: PATCH it while its round is open.
    async function edit(value, shown) {
      if (busy) { return refuseBusy(); }
      if (!editing.editable) { showError(message("msg-previous-decided")); return null; }
      setBusy(true);
      let result;
      try {
        result = await api.patch(config.editUrl.replace("{id}", String(editing.annotation)), { value: value });
      } catch (e) {
        result = { status: 0, data: null };
      }
      setBusy(false);
      if (result.status === 200) {
        flash(shown);
        await backToCurrent();
      } else {
        if (result.status === 409) { editing.editable = false; showBanner(editing); }
        showError(errorText(result));
      }
      return result;
    }

    // Release the claim on screen without an answer and move on.
    async function skip() {
      if (busy) { return refuseBusy(); }
      if (!current || editing || !config.skipUrl) { return null; }
      setBusy(true);
      let result;
      try {
        result = await api.post(config.skipUrl.replace("{id}", String(current.assignment)));
      } catch (e) {
        result = { status: 0, data: null };
      }
      if (result.status === 204 || movesOn(result)) {
        current = null;
        flash(message("msg-skipped"));
        await loadNext();
      } else {
        setBusy(false);
        showError(errorText(result));
      }
      return result;
    }

    function typingIn(target) {
      if (!target || !target.tagName) { return false; }
      if (target.isContentEditable || target.tagName === "TEXTAREA" || target.tagName === "SELECT") { return true; }
      return target.tagName === "INPUT" && ["radio", "checkbox", "button", "submit"].indexOf(target.type) === -1;
    }

    if (el("skip-button")) { el("skip-button").addEventListener("click", function () { skip(); }); }
    if (el("previous-button")) { el("previous-button").addEventListener("click", function () { previous(); }); }
    if (el("back-to-current")) { el("back-to-current").addEventListener("click", function () { backToCurrent(); }); }
    if (nav.keys) {
      document.addEventListener("keydown", function (event) {
        if (event.ctrlKey || event.metaKey || event.altKey || event.repeat || typingIn(event.target)) { return; }
        if (nav.previous && event.key === "Backspace") {
          event.preventDefault();
          previous();
        } else if (nav.previous && event.key === "Escape" && editing) {
          event.preventDefault();
          backToCurrent();
        } else if (nav.skip && event.code === "KeyS") {
          event.preventDefault();
          skip();
        }
      });
    }
    refreshNav();

    // Input is a sign of the annotator at work: it renews the claim on screen (heartbeatUrl) at
    // most every heartbeatSeconds, so that a page left open with no input gives its item back
    // after the project's idle_release_seconds, while a page in use keeps it. A claim that
    // could not be kept (given to others meanwhile) is said so at once, not at the submit.
    // The beat goes out a moment after the input, and only if the claim is still the one on
    // screen with no submit on its way: a label key both is input and submits, and a beat
    // racing that submit would only be refused (409) for a claim that ended as it should.
    const BEAT_DELAY_MS = 1000;
    let beatAt = 0;
    let beatFor = null;
    let beatTimer = null;
    function heartbeat() {
      if (!config.heartbeatUrl || config.preview || !current || editing || beatTimer) { return; }
      const now = Date.now();
      if (beatFor === current.assignment && now - beatAt < (config.heartbeatSeconds || 60) * 1000) { return; }
      const claim = current.assignment;
      beatTimer = window.setTimeout(function () {
        beatTimer = null;
        if (busy || !current || current.assignment !== claim || editing) { return; }
        sendBeat(claim);
      }, BEAT_DELAY_MS);
    }
    async function sendBeat(claim) {
      beatFor = claim;
      beatAt = Date.now();
      let result;
      try {
        result = await api.post(config.heartbeatUrl.replace("{id}", String(beatFor)));
      } catch (e) {
        beatAt = 0;  // the next input tries again
        return;
      }
      // A submit on its way (busy) ends the claim itself: its 409 is no news.
      if (result.status === 409 && !busy && current && current.assignment === beatFor) { showError(errorText(result)); }
    }
    ["keydown", "pointerdown", "input"].forEach(function (type) { document.addEventListener(type, heartbeat, true); });

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
    // `shown`: the chosen label's text, flashed as the answer goes.
    async function send(body, shown) {
      if (busy) { return refuseBusy(); }
      if (!current) { return null; }
      if (config.preview) {
        // Nothing is sent: the preview stores nothing. The next item follows, as after a submit.
        el("preview-note").textContent = config.previewNotice;
        setBusy(true);
        await loadNext();
        return null;
      }
      setBusy(true);
      flash(shown);
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
      // `shown`: the chosen label as the annotator reads it (see labelText), flashed.
      submit: function (value, shown) { return editing ? edit(value, shown) : send({ value: value }, shown); },
      editing: function () { return editing; },
      skip: skip,
      previous: previous,
      backToCurrent: backToCurrent,
      flash: flash,
    };
  }

  // What an annotator has typed on a page of free texts and not sent yet, kept on the server
  // as the claim's draft (config.draftUrl; docs/api.md "Annotator comfort and the supervisor
  // console") while the claim is open: saved a moment after each change and when the page
  // is hidden or left (a reload, a change of interface language), taken back on a reload or
  // on another device. A draft that holds work keeps the claim for its whole claim_ttl, so
  // an author away in another tab (searching for a premise) does not lose the item. Leaving
  // while the input could not be saved (the server unreachable, or the preview, which keeps
  // no draft) asks first.
  //   collect()              the value to keep, or null when nothing is typed;
  //   restore(value, data)   put a stored value back on the item `data` on screen.
  // Returns {changed, take}: call changed() on input, take(data) from show(data).
  // When the session has ended (a 401 on any request of the page, which opens the login
  // page), what is typed is kept in sessionStorage for this page and claim; after the login
  // brings the annotator back it goes back on screen and to the server, with the keys typed
  // after the last save.
  function keepDrafts(page, collect, restore) {
    const DELAY_MS = 800;
    const KEPT_KEY = "mashov-typed-draft";  // sessionStorage: {path, assignment, value}
    let timer = null;
    let dirty = false;
    let failed = false;

    api.beforeLogin(function () {
      const claim = page.current();
      const value = collect();
      if (!claim || value === null) { return; }
      try {
        window.sessionStorage.setItem(KEPT_KEY, JSON.stringify({ path: window.location.pathname, assignment: claim.assignment, value: value }));
      } catch (e) { /* storage off or full: the last save on the server is what comes back */ }
    });

    function keptFor(claim) {
      const kept = takeKept(KEPT_KEY);
      return kept && kept.assignment === claim.assignment ? kept.value : null;
    }

    function urlOf(claim) {
      return claim && page.config.draftUrl && !page.config.preview ? page.config.draftUrl.replace("{id}", String(claim.assignment)) : null;
    }

    function save(keepalive) {
      clearTimeout(timer);
      const url = urlOf(page.current());
      // A submit on its way ends the claim and its draft: a save now would come too late.
      if (!url || !dirty || page.busy()) { return; }
      dirty = false;
      api.put(url, { value: collect() }, undefined, { keepalive: keepalive }).then(function (result) {
        // 409: the claim ended (submitted, skipped, given away); nothing left to keep.
        failed = result.status !== 200 && result.status !== 409;
        if (failed) { dirty = true; }
      }, function () { failed = true; dirty = true; });
    }

    function changed() {
      dirty = true;
      clearTimeout(timer);
      timer = setTimeout(function () { save(false); }, DELAY_MS);
    }

    async function take(data) {
      clearTimeout(timer);
      dirty = false;
      failed = false;
      const url = urlOf(data);
      if (!url) { return; }
      const kept = keptFor(data);
      if (kept) {
        restore(kept, data);
        changed();
        return;
      }
      const result = await api.get(url);
      // Another item by now, or typing started meanwhile: keep what is on screen.
      if (result.status !== 200 || page.current() !== data || collect() !== null) { return; }
      if (result.data && result.data.value) { restore(result.data.value, data); }
    }

    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "hidden") { save(true); }
    });
    window.addEventListener("pagehide", function () { save(true); });
    window.addEventListener("beforeunload", function (event) {
      const unsaved = collect() !== null && (failed || !urlOf(page.current()));
      save(true);
      if (unsaved) { event.preventDefault(); event.returnValue = ""; }
    });
    return { changed: changed, take: take };
  }

  // A label button's name without its key and definition ("Entailment").
  function labelText(button) {
    const copy = button.cloneNode(true);
    copy.querySelectorAll("kbd, .definition").forEach(function (node) { node.remove(); });
    return copy.textContent.trim();
  }

  // The digit of the physical key (Digit0-9, Numpad0-9) or null, so that shortcuts work on
  // Hebrew and Persian layouts too (a Persian layout types "۱" for the key Digit1).
  function digit(event) {
    const match = /^(?:Digit|Numpad)([0-9])$/.exec(event.code || "");
    return match ? Number(match[1]) : null;
  }

  return { create: create, digit: digit, labelText: labelText, keepDrafts: keepDrafts };
})();
