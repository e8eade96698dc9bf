// warp dashboard: live updates from GET /v1/events/stream (server-sent
// events). Agent-supplied values are only ever written with textContent;
// a structural change re-fetches this page and swaps its <main>, which
// the server rendered (and escaped) with html/template.
(function () {
  'use strict';
  var body = document.body;
  var offset = Number(body.dataset.now || Date.now()) - Date.now(); // server clock − browser clock
  var state = { updates: 0, refreshes: 0, connected: false, lastKind: '' };
  window.warpLive = state; // for tests and the curious

  function serverNow() { return Date.now() + offset; }
  function pad(n) { return n < 10 ? '0' + n : String(n); }

  // fmtDur writes like internal/age (the CLI's and the pages' one way):
  // 42s, 4m12s, 3h05m, 2d03h.
  function fmtDur(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm' + pad(s % 60) + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h' + pad(Math.floor(s % 3600 / 60)) + 'm';
    return Math.floor(s / 86400) + 'd' + pad(Math.floor(s % 86400 / 3600)) + 'h';
  }
  window.warpFmtDur = fmtDur; // for tests: the pages' and the server's writing agree
  function fmtUntil(ms) { return ms < 0 ? 'due ' + fmtDur(-ms) + ' ago' : 'in ' + fmtDur(ms); }

  var clock = document.getElementById('clock');
  function tick() {
    var now = serverNow();
    if (clock) clock.textContent = new Date(now).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
    document.querySelectorAll('[data-age]').forEach(function (el) {
      var t = Number(el.dataset.age);
      if (t > 0) el.textContent = fmtDur(now - t);
    });
    document.querySelectorAll('[data-until]').forEach(function (el) {
      var t = Number(el.dataset.until);
      if (t > 0) el.textContent = fmtUntil(t - now);
    });
  }
  setInterval(tick, 1000);

  // refresh re-fetches this page and swaps <main>, at most once a second.
  var refreshTimer = null, lastRefresh = 0;
  function scheduleRefresh(minGap) {
    if (refreshTimer) return;
    var wait = Math.max(0, lastRefresh + (minGap || 1000) - Date.now());
    refreshTimer = setTimeout(refresh, wait);
  }
  function refresh() {
    lastRefresh = Date.now();
    fetch(location.href, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) { if (!r.ok) throw new Error('status ' + r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var fresh = doc.querySelector('main'), old = document.querySelector('main');
        if (fresh && old) old.replaceWith(document.adoptNode(fresh));
        var n = Number(doc.body.dataset.now);
        if (n > 0) offset = n - Date.now();
        var mode = doc.getElementById('mode');
        if (mode) document.getElementById('mode').textContent = mode.textContent;
        state.refreshes++;
        tick();
        // Page scripts (charts, the lease timeline) re-bind to the new <main>.
        document.dispatchEvent(new CustomEvent('warp:refreshed'));
      })
      .catch(function () { /* the next update or the next tick retries */ })
      .then(function () { refreshTimer = null; });
  }

  function setText(row, field, text) {
    var el = row.querySelector('[data-field="' + field + '"]');
    if (el) el.textContent = text;
    return el;
  }

  // patchRow applies a ticket's new state to its row on the main page.
  function patchRow(row, t) {
    var badge = row.querySelector('.badge[data-field="verdict"]');
    var changed = row.dataset.verdict !== t.verdict;
    if (badge && t.verdict) {
      badge.className = 'badge v-' + t.verdict;
      badge.textContent = t.verdict;
      row.dataset.verdict = t.verdict;
    }
    setText(row, 'schema', t.schema_version ? 'v' + t.schema_version : '—');
    var act = row.querySelector('[data-field="activity"]');
    if (act) act.dataset.age = String(t.activity_at || 0);
    var hb = row.querySelector('[data-field="heartbeat"]');
    if (hb) hb.dataset.age = String(t.heartbeat_at || 0);
    var exp = row.querySelector('[data-field="expires"]');
    if (exp) exp.dataset.until = String(t.expires_at || 0);
    row.classList.remove('flash');
    void row.offsetWidth; // restart the animation
    row.classList.add('flash');
    tick();
    return changed;
  }

  function handle(m) {
    state.updates++;
    state.lastKind = m.kind;
    // Page scripts (charts, the lease timeline) follow the stream through
    // this event instead of opening a second EventSource.
    document.dispatchEvent(new CustomEvent('warp:update', { detail: m }));
    if (m.kind === 'mode-changed') {
      if (m.to) document.getElementById('mode').textContent = m.to;
      scheduleRefresh();
      return;
    }
    var page = body.dataset.page;
    if (page === 'charts') return; // charts.js follows the update itself
    if (page === 'confirm') return; // a form being filled in is not swapped
    if (page === 'hosts') {
      scheduleRefresh(5000);
      return;
    }
    if (body.dataset.ticket) {
      if (m.id === body.dataset.ticket) scheduleRefresh();
      return;
    }
    var t = m.ticket;
    var row = t && document.getElementById('t-' + t.id);
    if (m.kind === 'heartbeat' && t && row && t.state === 'claimed') {
      if (patchRow(row, t)) scheduleRefresh(); // the counts changed
      return;
    }
    if (m.kind === 'heartbeat' && !row) return; // not on this page
    scheduleRefresh();
  }

  var live = document.getElementById('live');
  function setLive(on) {
    state.connected = on;
    if (!live) return;
    live.textContent = on ? 'live' : 'reconnecting';
    live.className = 'live ' + (on ? 'on' : 'off');
  }
  if (!window.EventSource || !body.dataset.stream) return;
  var seenHello = false;
  var es = new EventSource(body.dataset.stream);
  es.addEventListener('hello', function (e) {
    var m = JSON.parse(e.data);
    if (m.now) offset = m.now - Date.now();
    if (seenHello) scheduleRefresh(); // reconnected: catch up on what was missed
    seenHello = true;
    setLive(true);
  });
  es.addEventListener('update', function (e) {
    var m;
    try { m = JSON.parse(e.data); } catch (err) { return; }
    if (m.now) offset = m.now - Date.now();
    handle(m);
  });
  es.onerror = function () { setLive(false); };
})();
