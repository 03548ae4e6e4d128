// The annotator-quality page: sort the table by any column (click its title; again to
// reverse), and move a member back to trial through the REST API without leaving the page.
"use strict";

(function () {
  const table = document.getElementById("quality-table");
  if (!table) { return; }
  const status = document.getElementById("quality-status");
  const body = table.tBodies[0];
  const headers = Array.prototype.slice.call(table.tHead.rows[0].cells);

  function key(row, index, numeric) {
    const raw = row.cells[index].getAttribute("data-sort");
    if (raw === null || raw === "") { return null; }
    return numeric ? parseFloat(raw) : raw;
  }

  function sortBy(index) {
    const header = headers[index];
    const numeric = header.getAttribute("data-type") === "number";
    const ascending = header.getAttribute("aria-sort") !== "ascending";
    const rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      const x = key(a, index, numeric), y = key(b, index, numeric);
      if (x === null && y === null) { return 0; }
      if (x === null) { return 1; }  // missing figures last, whichever the direction
      if (y === null) { return -1; }
      const order = numeric ? x - y : String(x).localeCompare(String(y));
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  headers.forEach(function (header, index) {
    const button = header.querySelector("button.sort");
    if (button) { button.addEventListener("click", function () { sortBy(index); }); }
  });

  function say(text) {
    status.textContent = text;
    status.hidden = false;
  }

  body.addEventListener("submit", async function (event) {
    const form = event.target.closest("form.trial-form");
    if (!form) { return; }
    event.preventDefault();
    const username = form.getAttribute("data-username");
    const url = "/api/projects/" + encodeURIComponent(table.getAttribute("data-slug")) + "/members/" + encodeURIComponent(username) + "/";
    form.querySelector("button").disabled = true;
    const result = await window.MashovApi.patch(url, { status: "trial" });
    if (result.status === 200) {
      const row = form.closest("tr");
      const cell = row.querySelector(".member-status");
      cell.textContent = result.data.status;
      cell.setAttribute("data-sort", result.data.status);
      form.remove();
      say(table.getAttribute("data-moved").replace("%s", username));
    } else {
      form.querySelector("button").disabled = false;
      say(window.MashovApi.errorText(result));
    }
  });
})();
