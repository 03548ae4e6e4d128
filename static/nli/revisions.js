// The author's revision page: one card per failed item with the labels cast (counts only),
// a form to edit premise/hypothesis and a Withdraw button, posting to
// POST /api/items/{id}/revise/ with the session and CSRF token.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("revisions-config").textContent);
  const api = window.MashovApi;
  const el = function (id) { return document.getElementById(id); };
  const list = el("revision-list");
  let open = 0;

  function labelName(label) {
    const node = el("label-" + label);
    return node ? node.textContent : label;
  }

  // A textarea's value has its line breaks normalised to LF; compare against the stored
  // text normalised the same way so that an untouched field is never sent (and so never
  // altered).
  function asTextarea(text) { return text.replace(/\r\n?/g, "\n"); }

  function finish(card, text) {
    card.querySelector(".revise-form").hidden = true;
    const done = card.querySelector(".item-done");
    done.textContent = text;
    done.hidden = false;
    card.classList.add("finished");
    open -= 1;
  }

  async function send(card, item, body) {
    const error = card.querySelector(".item-error");
    const buttons = card.querySelectorAll("button");
    error.hidden = true;
    buttons.forEach(function (b) { b.disabled = true; });
    let result;
    try {
      result = await api.post(config.reviseUrl.replace("{id}", String(item.id)), body);
    } catch (e) {
      result = { status: 0, data: null };
    }
    buttons.forEach(function (b) { b.disabled = false; });
    if (result.status === 200) {
      finish(card, el(body.withdraw ? "msg-withdrawn" : "msg-revised").textContent);
      return;
    }
    error.textContent = result.status === 0 ? "Network error" : errorsByLabel(card, result);
    error.hidden = false;
  }

  // The API names a field by its code (`hypothesis`, `value.premise`): the card marks that
  // text box and names it by its label, in the interface's language.
  function errorsByLabel(card, result) {
    card.querySelectorAll("textarea").forEach(function (box) { box.removeAttribute("aria-invalid"); });
    if (!result.data || !Array.isArray(result.data.errors)) { return api.errorText(result); }
    const lines = result.data.errors.map(function (e) {
      const name = String(e.field || "").split(".").pop();
      const box = name ? card.querySelector("textarea[name='" + name.replace(/[^a-z_]/g, "") + "']") : null;
      if (!box) { return e.message; }
      box.setAttribute("aria-invalid", "true");
      return box.closest("label").firstChild.textContent.trim() + ": " + e.message;
    });
    return Array.from(new Set(lines)).join(" · ");
  }

  function render(item) {
    const card = el("revision-template").content.firstElementChild.cloneNode(true);
    card.dataset.item = String(item.id);
    card.querySelector(".external-id").textContent = item.external_id;
    card.querySelector(".round").textContent = String(item.round);
    card.querySelector(".intended").textContent = item.intended_label ? labelName(item.intended_label) : "—";
    const cast = card.querySelector(".labels-cast");
    Object.keys(item.labels_cast).forEach(function (label) {
      const li = document.createElement("li");
      li.className = "label-count";
      li.dataset.label = label;
      li.textContent = labelName(label) + ": " + item.labels_cast[label];
      cast.appendChild(li);
    });
    const premise = card.querySelector("textarea.premise");
    const hypothesis = card.querySelector("textarea.hypothesis");
    const original = { premise: asTextarea(item.payload.premise || ""), hypothesis: asTextarea(item.payload.hypothesis || "") };
    premise.value = item.payload.premise || "";
    hypothesis.value = item.payload.hypothesis || "";
    const form = card.querySelector(".revise-form");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const body = {};
      if (premise.value !== original.premise) { body.premise = premise.value; }
      if (hypothesis.value !== original.hypothesis) { body.hypothesis = hypothesis.value; }
      if (!Object.keys(body).length) {
        const error = card.querySelector(".item-error");
        error.textContent = el("msg-unchanged").textContent;
        error.hidden = false;
        return;
      }
      send(card, item, body);
    });
    card.querySelector("button.withdraw").addEventListener("click", function () {
      if (!window.confirm(el("msg-confirm").textContent)) { return; }
      send(card, item, { withdraw: true });
    });
    list.appendChild(card);
    open += 1;
  }

  config.items.forEach(render);
  el("nothing").hidden = config.items.length !== 0;
})();
