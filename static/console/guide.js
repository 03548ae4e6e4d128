// The annotate page's guide (templates/console/guide.html): open on a user's first visit to a
// project, then as they last left it, remembered in localStorage per user and project (the
// key, "<user id>:<slug>", comes as json_script "guide-key"). On a phone the first visit
// finds it closed: open, it would push the item below the fold; its summary is the toggle.
"use strict";

(function () {
  const guide = document.getElementById("guide");
  if (!guide) { return; }
  const key = "mashov.guide." + JSON.parse(document.getElementById("guide-key").textContent);
  let stored = null;
  try { stored = window.localStorage.getItem(key); } catch (e) { stored = null; }
  const phone = window.matchMedia && window.matchMedia("(max-width: 720px)").matches;
  guide.open = stored === null ? !phone : stored !== "closed";
  guide.addEventListener("toggle", function () {
    try { window.localStorage.setItem(key, guide.open ? "open" : "closed"); } catch (e) { /* storage off: nothing kept */ }
  });
})();
