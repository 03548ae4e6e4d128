// The error pages' language buttons (templates/_language_switch.html, fill_on_submit): the page
// carries nothing of the request, so the form takes the CSRF token from its cookie and the
// address to come back to from the location as it is sent.
"use strict";

document.querySelectorAll("form.lang-switch.fill-on-submit").forEach(function (form) {
  form.addEventListener("submit", function () {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    form.elements.csrfmiddlewaretoken.value = match ? decodeURIComponent(match[1]) : "";
    form.elements.next.value = window.location.pathname + window.location.search;
  });
});
