// tai serve's page: refresh the server-rendered list when a run's feed
// says something happened, and follow a transcript. No inline script (the
// page's Content-Security-Policy allows only this file); agent text is set
// as text, never as markup.
(function () {
  'use strict';
  var body = document.body;
  var page = body.getAttribute('data-page');
  if (!window.EventSource) return;

  // key names a node that stays across refreshes: an item or run by its
  // id, a section by its heading.
  var key = function (n) {
    return n.nodeType === 1 ? (n.id || n.getAttribute('aria-labelledby') || '') : '';
  };
  // sync makes cur's children what next's are, without ever taking a kept
  // node out of the document: an item still waiting stays as it is, so a
  // form being filled keeps its values, its focus and the phone's
  // keyboard; a run or section is brought up to date in place.
  var sync = function (cur, next) {
    var have = {}, keep = new Map();
    Array.prototype.forEach.call(cur.childNodes, function (c) { var k = key(c); if (k) have[k] = c; });
    var want = Array.prototype.slice.call(next.childNodes);
    want.forEach(function (n) {
      var o = have[key(n)];
      if (o && o.tagName === n.tagName) keep.set(n, o);
    });
    var kept = new Set(keep.values());
    Array.prototype.slice.call(cur.childNodes).forEach(function (c) { if (!kept.has(c)) cur.removeChild(c); });
    var ref = cur.firstChild;
    want.forEach(function (n) {
      var o = keep.get(n);
      if (!o) { cur.insertBefore(n, ref); return; }
      if (o !== ref) cur.insertBefore(o, ref); // only when the order changed
      ref = o.nextSibling;
      if (o.matches('article.item')) return;
      Array.prototype.slice.call(o.attributes).forEach(function (a) { if (!n.hasAttribute(a.name)) o.removeAttribute(a.name); });
      Array.prototype.forEach.call(n.attributes, function (a) { o.setAttribute(a.name, a.value); });
      sync(o, n);
    });
  };

  if (page === 'index') {
    var main = document.getElementById('main');
    var busy = false, again = false;
    var refresh = function () {
      if (busy) { again = true; return; }
      busy = true;
      fetch('/?fragment=main' + (location.search ? '&' + location.search.slice(1) : ''), { credentials: 'same-origin' })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
        .then(function (html) {
          var next = document.createElement('div');
          next.innerHTML = html; // rendered and escaped by the server
          sync(main, next);
          var s = document.getElementById('summary');
          if (s) s.textContent = main.querySelectorAll('article.item').length + ' waiting · ' + main.querySelectorAll('article.run').length + ' running';
          body.setAttribute('data-refreshed', String(Date.now()));
        })
        .catch(function () {})
        .then(function () { busy = false; if (again) { again = false; refresh(); } });
    };
    var es = new EventSource('/api/events');
    es.onmessage = refresh;
    es.addEventListener('runs', refresh);
    es.addEventListener('ended', refresh);
    es.onopen = refresh; // after a reconnect: what was missed
    body.setAttribute('data-live', 'true');
  }

  if (page === 'run') {
    var box = document.getElementById('transcript');
    var run = body.getAttribute('data-run'), session = body.getAttribute('data-session') || '';
    var t = new EventSource('/api/runs/' + encodeURIComponent(run) + '/transcript?session=' + encodeURIComponent(session));
    t.onmessage = function (e) {
      var d = JSON.parse(e.data), div = document.createElement('div');
      div.textContent = d.line;
      box.appendChild(div);
      box.scrollTop = box.scrollHeight;
    };
    t.addEventListener('end', function () {
      t.close();
      var div = document.createElement('div');
      div.className = 'dim';
      div.textContent = '— the run ended';
      box.appendChild(div);
    });
  }
})();
