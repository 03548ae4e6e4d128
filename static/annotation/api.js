// Small fetch wrapper for pages: session auth plus Django's CSRF token from its cookie.
// API tokens never reach a page; the browser uses its session only.
"use strict";

window.MashovApi = (function () {
  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function request(method, url, body, headers) {
    const options = {
      method: method,
      credentials: "same-origin",
      headers: Object.assign({ "Accept": "application/json", "X-CSRFToken": csrfToken() }, headers || {}),
    };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(url, options);
    let data = null;
    if (response.status !== 204) {
      try { data = await response.json(); } catch (e) { data = null; }
    }
    return { status: response.status, data: data };
  }

  function errorText(result) {
    if (result.data && Array.isArray(result.data.errors)) {
      return result.data.errors.map(function (e) { return (e.field ? e.field + ": " : "") + e.message; }).join("; ");
    }
    return "HTTP " + result.status;
  }

  function newKey() {
    if (window.crypto && window.crypto.randomUUID) { return window.crypto.randomUUID(); }
    return String(Date.now()) + "-" + String(Math.random()).slice(2);
  }

  return { get: function (url) { return request("GET", url); }, post: request.bind(null, "POST"), patch: request.bind(null, "PATCH"), errorText: errorText, newKey: newKey };
})();
