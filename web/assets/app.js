// tai serve's page: refresh the server-rendered list when a run's feed
// says something happened, and follow a transcript. No inline script (the
// page's Content-Security-Policy allows only this file); agent text is set
// as text, never as markup.
(function () {
  'use strict';
  var body = document.body;
  var page = body.getAttribute('data-page');
  if (!window.EventSource) return;

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
          // An item still waiting keeps its node: a form being filled is
          // not replaced under the user's fingers.
          next.querySelectorAll('article.item').forEach(function (n) {
            var old = document.getElementById(n.id);
            if (old && main.contains(old)) n.replaceWith(old);
          });
          main.replaceChildren.apply(main, Array.prototype.slice.call(next.childNodes));
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
