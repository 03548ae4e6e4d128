// The leaderboard: while an evaluation is queued or running, ask the API for its status
// every two seconds and reload the page once it is done or failed. No other behaviour:
// the page is complete without this script.
(function () {
  "use strict";
  var rows = document.querySelectorAll("tr[data-poll]");
  if (!rows.length) { return; }
  var pending = rows.length;
  function poll(row) {
    fetch(row.getAttribute("data-poll"), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) {
        if (body && (body.status === "done" || body.status === "failed")) {
          pending -= 1;
          if (pending === 0) { window.location.reload(); }
          return;
        }
        if (body) { window.setTimeout(function () { poll(row); }, 2000); }
      })
      .catch(function () { window.setTimeout(function () { poll(row); }, 5000); });
  }
  rows.forEach(poll);
})();
