// warp dashboard: keeps the charts section (#charts, drawn by the server)
// current. It follows the page's one event stream through live.js's
// warp:update events — no second EventSource — and re-fetches the section
// from its data-charts route at most every few seconds, swapping it whole:
// the server escaped every label with html/template.
(function () {
  'use strict';
  var MIN_GAP = 3000; // ms between two fetches
  var state = { updates: 0, fetches: 0, failures: 0 };
  window.warpCharts = state; // for tests and the curious
  var timer = null, inflight = false, dirty = false, last = 0;

  function section() { return document.getElementById('charts'); }

  // schedule fetches the charts once the gap since the last fetch is
  // over; an update that arrives while a fetch is under way asks for
  // another one after it, so the last update is never left out.
  function schedule() {
    if (!section()) return;
    if (inflight) { dirty = true; return; }
    if (timer) return;
    timer = setTimeout(load, Math.max(0, last + MIN_GAP - Date.now()));
  }

  function load() {
    timer = null;
    var s = section();
    if (!s) return;
    inflight = true;
    dirty = false;
    last = Date.now();
    fetch(s.dataset.charts, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) { if (!r.ok) throw new Error('status ' + r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var fresh = doc.getElementById('charts'), old = section();
        if (fresh && old) old.replaceWith(document.adoptNode(fresh));
        state.fetches++;
      })
      .catch(function () { state.failures++; })
      .then(function () {
        inflight = false;
        if (dirty) { dirty = false; schedule(); }
      });
  }

  document.addEventListener('warp:update', function () { state.updates++; schedule(); });
  // live.js swapped <main>: the charts sit outside it, but a page that
  // moved them inside would need them fetched again.
  document.addEventListener('warp:refreshed', function () {
    var s = section();
    if (s && s.closest('main')) schedule();
  });
})();
