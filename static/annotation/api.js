// Small fetch wrapper for pages: session auth plus Django's CSRF token from its cookie.
// API tokens never reach a page; the browser uses its session only.
"use strict";

window.MashovApi = (function () {
  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  const LOGIN_URL = "/login/";  // the "login" route of annotation/urls.py

  // A 401 means the session has ended (expired, or logged out in another tab): on to the login
  // page, which says so (?session=ended) and brings the user back here (?next=). Before it, the
  // page's beforeLogin hooks keep what would be lost (annotate_page.js: the answer being sent).
  // A 403 is a refusal of a signed-in user and stays on the page with its message.
  const beforeLogin = [];
  let leaving = false;
  function toLogin(method, url, body, headers) {
    beforeLogin.forEach(function (hook) { hook({ method: method, url: url, body: body, headers: headers || {} }); });
    if (leaving) { return; }
    leaving = true;
    window.location.assign(LOGIN_URL + "?session=ended&next=" + encodeURIComponent(window.location.pathname + window.location.search));
  }

  // `extra.keepalive`: the request outlives the page (a draft saved as the tab closes).
  async function request(method, url, body, headers, extra) {
    const options = {
      method: method,
      credentials: "same-origin",
      headers: Object.assign({ "Accept": "application/json", "X-CSRFToken": csrfToken() }, headers || {}),
      keepalive: Boolean(extra && extra.keepalive),
    };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(url, options);
    if (response.status === 401) { toLogin(method, url, body, headers); }
    let data = null;
    if (response.status !== 204) {
      try { data = await response.json(); } catch (e) { data = null; }
    }
    return { status: response.status, data: data };
  }

  function errorText(result) {
    if (result.data && Array.isArray(result.data.errors)) {
      // The messages alone, each once: `field` is the API's code, not words for a person
      // (a page that has the field marks it there).
      return Array.from(new Set(result.data.errors.map(function (e) { return e.message; }))).join(" · ");
    }
    return "HTTP " + result.status;
  }

  function newKey() {
    if (window.crypto && window.crypto.randomUUID) { return window.crypto.randomUUID(); }
    return String(Date.now()) + "-" + String(Math.random()).slice(2);
  }

  // A form of a supervisor's page (the project's settings, a new project, an item's text
  // edit) whose changes are not saved yet: leaving it (a reload, a link, the language
  // buttons) asks first. Its state is taken now; call the returned saved() once the server
  // has what it shows.
  function guardForm(form) {
    function state() {
      return Array.from(form.elements).map(function (e) {
        return e.type === "checkbox" || e.type === "radio" ? String(e.checked) : String(e.value || "");
      }).join("\u0000");
    }
    let kept = state();
    window.addEventListener("beforeunload", function (event) {
      if (state() !== kept) { event.preventDefault(); event.returnValue = ""; }
    });
    return { saved: function () { kept = state(); } };
  }

  return {
    get: function (url) { return request("GET", url); },
    post: request.bind(null, "POST"),
    put: request.bind(null, "PUT"),
    patch: request.bind(null, "PATCH"),
    errorText: errorText,
    newKey: newKey,
    // hook({method, url, body, headers}) runs for every request refused with 401, before the
    // login page is opened.
    beforeLogin: function (hook) { beforeLogin.push(hook); },
    guardForm: guardForm,
  };
})();
