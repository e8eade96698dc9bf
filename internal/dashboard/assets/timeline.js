// warp dashboard: keeps the ticket page's lease timeline current. It
// follows live.js's stream through the warp:update event (no second
// EventSource) and re-fetches GET /tickets/{id}/timeline, debounced, when
// an update names this ticket; the server renders the picture (SVG, with
// html/template's escaping), the script only swaps it in. While the lease
// is held it also re-fetches now and then, so "now" moves on.
(function () {
  'use strict';
  var body = document.body;
  var state = { fetches: 0, swaps: 0, refreshed: 0 };
  window.warpTimeline = state; // for tests and the curious
  var DEBOUNCE = 250, IDLE = 30000;
  var timer = null, busy = false, again = false;

  function section() { return document.getElementById('lease-timeline'); }

  function schedule(wait) {
    if (timer) return;
    timer = setTimeout(load, wait);
  }

  function load() {
    timer = null;
    var s = section();
    if (!s || !s.dataset.src) return;
    if (busy) { again = true; return; }
    busy = true;
    state.fetches++;
    fetch(s.dataset.src, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) { if (!r.ok) throw new Error('status ' + r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var fresh = doc.getElementById('lease-timeline'), old = section();
        // Keep the newer picture: a <main> swap may have brought one already.
        if (fresh && old && Number(fresh.dataset.at) >= Number(old.dataset.at)) {
          old.replaceWith(document.adoptNode(fresh));
          state.swaps++;
        }
      })
      .catch(function () { /* the next update or the idle timer retries */ })
      .then(function () {
        busy = false;
        if (again) { again = false; schedule(DEBOUNCE); }
      });
  }

  document.addEventListener('warp:update', function (e) {
    var m = e.detail || {};
    if (!body.dataset.ticket) return;
    if (m.id === body.dataset.ticket || m.kind === 'mode-changed') schedule(DEBOUNCE);
  });
  // live.js swapped <main>: the picture came with it, re-rendered.
  document.addEventListener('warp:refreshed', function () { state.refreshed++; });
  setInterval(function () {
    var s = section();
    if (s && s.dataset.held === 'true' && !document.hidden) schedule(0);
  }, IDLE);
})();
