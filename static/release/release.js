// The Release page: start curation jobs, follow them until they finish, decide pairs.
// Data comes from json_script (the CSP allows no inline script); requests use the session.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("release-config").textContent);
  const text = JSON.parse(document.getElementById("release-messages").textContent);
  const status = document.getElementById("release-status");

  function show(message, isError) {
    status.hidden = false;
    status.className = isError ? "error" : "notice";
    status.textContent = message;
  }

  function follow(jobId) {
    show(text.queued.replace("{job}", jobId));
    const url = config.job.replace("{id}", jobId);
    const poll = async function () {
      const result = await MashovApi.get(url);
      if (result.status !== 200) { show(MashovApi.errorText(result), true); return; }
      if (result.data.status === "done") { show(text.done); window.location.reload(); return; }
      if (result.data.status === "failed") {
        const error = result.data.error || {};
        show(text.failed + " " + (error.message || MashovApi.errorText({ status: 500, data: error })), true);
        return;
      }
      window.setTimeout(poll, 1000);
    };
    poll();
  }

  async function start(url, body) {
    const result = await MashovApi.post(url, body, { "Idempotency-Key": MashovApi.newKey() });
    if (result.status === 202) { follow(result.data.job); } else { show(MashovApi.errorText(result), true); }
  }

  function number(form, name) {
    const field = form.elements[name];
    return field ? Number(field.value) : undefined;
  }

  const duplicatesForm = document.getElementById("duplicates-form");
  if (duplicatesForm) {
    duplicatesForm.addEventListener("submit", function (event) {
      event.preventDefault();
      start(config.duplicates, { threshold: number(duplicatesForm, "threshold"), representation: duplicatesForm.elements.representation.value });
    });
  }

  const splitsForm = document.getElementById("splits-form");
  if (splitsForm) {
    splitsForm.addEventListener("submit", function (event) {
      event.preventDefault();
      const shares = {};
      splitsForm.querySelectorAll("[data-split]").forEach(function (input) { shares[input.dataset.split] = Number(input.value); });
      const body = { shares: shares, seed: number(splitsForm, "seed") };
      if (splitsForm.elements.leak_threshold) { body.leak_threshold = number(splitsForm, "leak_threshold"); }
      start(config.splits, body);
    });
  }

  const leaksForm = document.getElementById("leaks-form");
  if (leaksForm) {
    leaksForm.addEventListener("submit", function (event) {
      event.preventDefault();
      start(config.leaks, { threshold: number(leaksForm, "threshold") });
    });
  }

  document.querySelectorAll(".pair[data-pair]").forEach(function (pair) {
    pair.addEventListener("click", async function (event) {
      const button = event.target.closest("button");
      if (!button) { return; }
      let result;
      if (button.dataset.decision) {
        result = await MashovApi.post(config.duplicates + pair.dataset.pair + "/", { decision: button.dataset.decision });
      } else if (button.dataset.restore) {
        result = await MashovApi.post(config.duplicates + "restore/", { items: [Number(button.dataset.restore)] });
      } else {
        return;
      }
      if (result.status === 200) { show(text.saved); window.location.reload(); } else { show(MashovApi.errorText(result), true); }
    });
  });

  const removeAll = document.getElementById("remove-all");
  if (removeAll) {
    removeAll.addEventListener("click", async function () {
      if (!window.confirm(text.confirmRemoveAll)) { return; }
      const result = await MashovApi.post(config.duplicates + "remove-all/");
      if (result.status === 200) { show(text.saved); window.location.reload(); } else { show(MashovApi.errorText(result), true); }
    });
  }

  Object.keys(config.running).forEach(function (kind) { follow(config.running[kind]); });
})();
