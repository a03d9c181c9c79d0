/**
 * The console's script (served as `console.js`): plain JavaScript for current browsers, no
 * dependency, no build step. It reads and acts through the admin API beside the page (same
 * origin), writes only text into the page (textContent, never HTML from data), draws the
 * throughput chart as inline SVG, asks before every action (window.confirm) and keeps the focus
 * where it was when a live refresh rebuilds a table. Kept free of backticks and `${`: it is
 * embedded in this TypeScript module as a raw string so that it ships with `tsc` output.
 */
export const CONSOLE_SCRIPT = String.raw`(function () {
  'use strict';
  var self = document.currentScript;
  // The admin API sits beside the console: <api>/console/console.js → <api>.
  var api = new URL(self.src, location.href).pathname.replace(/\/console\/console\.js$/, '');
  var refreshMs = 1000 * Number(document.body.getAttribute('data-refresh-seconds') || 5);
  var MINUTES = 15;
  var state = { recentStatus: '', consumer: '', busy: false, key: null, timer: null };

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (name) {
      if (name === 'text') node.textContent = attrs[name];
      else if (name === 'className') node.className = attrs[name];
      else node.setAttribute(name, attrs[name]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  function svg(tag, attrs, text) {
    var node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attrs || {}).forEach(function (name) { node.setAttribute(name, String(attrs[name])); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function say(message, isError) {
    var s = $('status');
    s.textContent = message;
    s.className = isError ? 'status error' : 'status';
  }

  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      var v = params[k];
      if (v !== undefined && v !== null && v !== '') parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(v));
    });
    return parts.length ? '?' + parts.join('&') : '';
  }

  // Same-origin calls to the admin API (the server refuses actions from other sites).
  function call(method, path, params) {
    return fetch(api + path + query(params || {}), {
      method: method,
      credentials: 'same-origin',
      headers: { Accept: 'application/json' },
    }).then(function (r) {
      if (r.status === 204) return null;
      return r.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
        if (!r.ok) {
          var detail = body && (body.detail || body.title || body.message);
          var err = new Error(detail || 'HTTP ' + r.status);
          err.status = r.status;
          throw err;
        }
        return body;
      });
    });
  }

  function age(ms) {
    if (!ms) return 'none';
    var s = Math.round(ms / 1000);
    if (s < 60) return s + ' s';
    var m = Math.floor(s / 60);
    if (m < 60) return m + ' min ' + (s % 60) + ' s';
    var h = Math.floor(m / 60);
    if (h < 48) return h + ' h ' + (m % 60) + ' min';
    return Math.floor(h / 24) + ' d ' + (h % 24) + ' h';
  }

  function when(value) {
    if (!value) return '–';
    var d = new Date(value);
    if (isNaN(d.getTime())) return String(value);
    return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }

  function badge(status) { return el('span', { className: 'badge ' + status, text: status }); }

  function cell(text, className) {
    return el('td', { text: text === null || text === undefined || text === '' ? '–' : String(text), className: className || '' });
  }

  function fill(tbody, rows, columns, emptyText) {
    tbody.textContent = '';
    if (!rows.length) {
      tbody.appendChild(el('tr', null, [el('td', { colspan: String(columns), className: 'empty', text: emptyText })]));
      return;
    }
    rows.forEach(function (r) { tbody.appendChild(r); });
  }

  function actionButton(label, key, ariaLabel, handler, danger) {
    var b = el('button', { type: 'button', 'data-key': key, 'aria-label': ariaLabel, text: label, className: danger ? 'danger' : '' });
    b.addEventListener('click', handler);
    return b;
  }

  function renderCounts(o) {
    $('count-pending').textContent = String(o.counts.pending);
    $('count-sent').textContent = String(o.counts.sent);
    $('count-dead').textContent = String(o.counts.dead);
    $('oldest-pending').textContent = age(o.oldestPendingAgeMs);
  }

  // Bars oldest (left) to newest (right); each with a tooltip, the whole with a text summary.
  function renderChart(perMinute) {
    var W = 600, H = 170, top = 16, bottom = 24, left = 36;
    var series = perMinute.slice(0, MINUTES).reverse();
    var max = Math.max.apply(null, series.concat([1]));
    var slot = (W - left - 8) / series.length;
    var root = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-labelledby': 'chart-h chart-desc', id: 'chart-svg' });
    root.appendChild(svg('desc', { id: 'chart-desc' }, 'Oldest minute first: ' + series.join(', ') + '.'));
    root.appendChild(svg('line', { x1: left, y1: H - bottom, x2: W - 4, y2: H - bottom, 'class': 'axis' }));
    root.appendChild(svg('text', { x: left - 6, y: top + 4, 'text-anchor': 'end' }, String(max)));
    root.appendChild(svg('text', { x: left - 6, y: H - bottom, 'text-anchor': 'end' }, '0'));
    series.forEach(function (n, i) {
      var h = Math.round(((H - top - bottom) * n) / max);
      var x = left + i * slot + 2;
      var bar = svg('rect', { x: x.toFixed(1), y: H - bottom - h, width: (slot - 4).toFixed(1), height: h, 'class': 'bar' });
      var ago = series.length - 1 - i;
      bar.appendChild(svg('title', {}, n + ' sent ' + (ago === 0 ? 'in the last minute' : ago + ' min ago')));
      root.appendChild(bar);
      if (ago % 5 === 0) root.appendChild(svg('text', { x: (x + slot / 2 - 2).toFixed(1), y: H - 6, 'text-anchor': 'middle' }, ago === 0 ? 'now' : '-' + ago + ' min'));
    });
    var box = $('chart');
    box.textContent = '';
    box.appendChild(root);
  }

  function idButton(m) {
    var b = el('button', { type: 'button', className: 'link mono', 'data-key': 'detail:' + m.id, 'aria-label': 'Details of message ' + m.id, text: m.id });
    b.addEventListener('click', function () { showDetail(m.id); });
    return b;
  }

  function renderRecent(messages) {
    fill($('recent').tBodies[0], messages.map(function (m) {
      return el('tr', { 'data-id': m.id }, [
        el('td', null, [idButton(m)]), cell(m.type), cell(m.partitionKey, 'mono'),
        el('td', null, [badge(m.status)]), cell(m.attempts, 'num'), cell(m.lastError, 'error'), cell(when(m.createdAt)),
      ]);
    }), 7, 'No messages.');
  }

  function renderDead(messages) {
    fill($('dead-list').tBodies[0], messages.map(function (m) {
      return el('tr', { 'data-id': m.id }, [
        el('td', null, [idButton(m)]), cell(m.type), cell(m.partitionKey, 'mono'), cell(m.attempts, 'num'), cell(m.lastError, 'error'),
        el('td', { className: 'nowrap' }, [
          actionButton('Requeue', 'requeue:' + m.id, 'Requeue message ' + m.id, function () { requeue(m.id); }),
          actionButton('Purge', 'purge:' + m.id, 'Purge message ' + m.id, function () { purge(m.id); }, true),
        ]),
      ]);
    }), 6, 'No dead letters.');
    $('requeue-all').disabled = messages.length === 0;
    $('purge-all').disabled = messages.length === 0;
  }

  function renderConsumers(consumers) {
    fill($('consumers').tBodies[0], consumers.map(function (c) {
      return el('tr', null, [cell(c.consumer, 'mono'), cell(c.processed, 'num'), cell(c.retrying, 'num'), cell(c.failed, 'num')]);
    }), 4, 'No inbox records.');
    var select = $('inbox-consumer');
    var known = {};
    Array.prototype.forEach.call(select.options, function (o) { known[o.value] = true; });
    consumers.forEach(function (c) {
      if (!known[c.consumer]) select.appendChild(el('option', { value: c.consumer, text: c.consumer }));
    });
  }

  function renderInbox(failed, processed) {
    fill($('inbox-failed').tBodies[0], failed.map(function (r) {
      return el('tr', { 'data-consumer': r.consumer, 'data-message-id': r.messageId }, [
        cell(r.consumer, 'mono'), cell(r.messageId, 'mono'), el('td', null, [badge(r.status)]), cell(r.attempts, 'num'), cell(r.lastError, 'error'), cell(when(r.receivedAt)),
        el('td', { className: 'nowrap' }, [
          actionButton('Reset', 'reset:' + r.consumer + ':' + r.messageId, 'Reset inbox record of message ' + r.messageId + ' for ' + r.consumer, function () { resetInbox(r.consumer, r.messageId); }),
        ]),
      ]);
    }), 7, 'No failed or retrying messages.');
    fill($('inbox-recent').tBodies[0], processed.map(function (r) {
      return el('tr', null, [cell(r.consumer, 'mono'), cell(r.messageId, 'mono'), cell(r.attempts, 'num'), cell(when(r.receivedAt)), cell(when(r.processedAt))]);
    }), 5, 'No processed messages.');
  }

  // A refresh rebuilds the tables: the button that had the focus gets it back.
  function keepFocus(render) {
    var active = document.activeElement;
    var key = active && active.getAttribute ? active.getAttribute('data-key') : null;
    render();
    if (!key || document.activeElement !== document.body) return;
    var again = Array.prototype.find.call(document.querySelectorAll('[data-key]'), function (n) { return n.getAttribute('data-key') === key; });
    if (again) again.focus();
  }

  function refresh() {
    if (state.busy) return Promise.resolve();
    state.busy = true;
    var consumer = state.consumer || undefined;
    return Promise.all([
      call('GET', '/overview'),
      call('GET', '/outbox', { order: 'newest', limit: 25, status: state.recentStatus }),
      call('GET', '/outbox', { status: 'dead', limit: 200 }),
      call('GET', '/inbox', { status: 'failed', consumer: consumer, limit: 50 }),
      call('GET', '/inbox', { status: 'retrying', consumer: consumer, limit: 50 }),
      call('GET', '/inbox', { status: 'processed', consumer: consumer, limit: 25 }),
    ]).then(function (r) {
      keepFocus(function () {
        renderCounts(r[0].outbox);
        renderChart(r[0].outbox.sentPerMinute);
        renderRecent(r[1]);
        renderDead(r[2]);
        renderConsumers(r[0].inbox.consumers);
        var failed = r[3].concat(r[4]).sort(function (a, b) { return a.receivedAt < b.receivedAt ? 1 : -1; });
        renderInbox(failed, r[5]);
      });
      $('updated').textContent = 'Updated ' + new Date().toLocaleTimeString();
    }).catch(function (e) {
      say('Could not load: ' + e.message, true);
    }).then(function () { state.busy = false; });
  }

  function act(question, method, path, params, done) {
    if (!window.confirm(question)) return Promise.resolve();
    return call(method, path, params).then(function (body) {
      say(done(body));
      return refresh();
    }).catch(function (e) { say(e.message, true); });
  }

  function requeue(id) {
    return act('Requeue message ' + id + '? The relay will publish it again.', 'POST', '/outbox/' + encodeURIComponent(id) + '/requeue', null,
      function () { return 'Message ' + id + ' re-queued.'; });
  }

  // Inbox reset: the next delivery of the message runs the (fixed) handler again.
  function resetInbox(consumer, messageId) {
    return act('Reset the inbox record of message ' + messageId + ' for ' + consumer + '? Its next delivery runs the handler again; requeue its outbox message to deliver it.',
      'POST', '/inbox/' + encodeURIComponent(consumer) + '/' + encodeURIComponent(messageId) + '/reset', null,
      function () { return 'Inbox record of ' + messageId + ' reset: requeue the message to run it again.'; });
  }

  function purge(id) {
    return act('Purge dead message ' + id + '? It is deleted for good.', 'DELETE', '/outbox/' + encodeURIComponent(id), null,
      function () { return 'Message ' + id + ' purged.'; });
  }

  function showDetail(id) {
    return call('GET', '/outbox/' + encodeURIComponent(id)).then(function (m) {
      $('detail-h').textContent = 'Message ' + m.id;
      var history = (m.failures || []).slice().reverse();
      fill($('detail-history').tBodies[0], history.map(function (x) {
        return el('tr', null, [cell(x.attempt, 'num'), cell(when(x.at)), cell(x.relay, 'mono'), cell(x.error), cell(x.message, 'error')]);
      }), 5, 'No failed attempt recorded.');
      $('detail-body').textContent = JSON.stringify(m, null, 2);
      $('detail').hidden = false;
      $('detail-h').focus();
    }).catch(function (e) { say(e.message, true); });
  }

  // ---- Dead letters by filter: count, then confirm, then act ----

  function filterParams() {
    var form = $('dead-filter');
    var p = {};
    ['type', 'partitionKey', 'error'].forEach(function (name) {
      var v = form.elements[name].value.trim();
      if (v) p[name] = v;
    });
    ['failedAfter', 'failedBefore'].forEach(function (name) {
      var v = form.elements[name].value;
      if (v) p[name] = new Date(v).toISOString();
    });
    return p;
  }

  function describeFilter(p) {
    var parts = Object.keys(p).map(function (k) { return k + ' ' + p[k]; });
    return parts.length ? parts.join(', ') : 'no criterion';
  }

  function filterReady(count) {
    var none = count === null || count === 0;
    $('filter-requeue').disabled = none;
    $('filter-purge').disabled = none;
  }

  function countMatching(event) {
    if (event) event.preventDefault();
    var p = filterParams();
    if (!Object.keys(p).length) {
      filterReady(null);
      $('filter-result').textContent = '';
      say('Set at least one criterion of the filter.', true);
      return Promise.resolve(null);
    }
    return call('GET', '/outbox/dead/count', p).then(function (b) {
      $('filter-result').textContent = b.count + (b.count === 1 ? ' dead message matches' : ' dead messages match') + ' (' + describeFilter(p) + ').';
      filterReady(b.count);
      return b.count;
    }).catch(function (e) { filterReady(null); say(e.message, true); return null; });
  }

  // The count is taken again right before the question, so the operator confirms what is there now.
  function actOnMatching(verb) {
    var p = filterParams();
    return countMatching().then(function (n) {
      if (!n) return;
      var question = verb === 'requeue'
        ? 'Requeue ' + n + ' dead messages (' + describeFilter(p) + ')? The relay will publish them again.'
        : 'Purge ' + n + ' dead messages (' + describeFilter(p) + ')? They are deleted for good.';
      return act(question, 'POST', '/outbox/dead/' + verb, p, function (b) {
        filterReady(null);
        $('filter-result').textContent = '';
        return verb === 'requeue' ? b.requeued + ' dead messages re-queued.' : b.purged + ' dead messages purged.';
      });
    });
  }

  function keyParams() {
    var form = $('key-form');
    var p = {};
    ['scope', 'method', 'route', 'tenant', 'principal', 'key'].forEach(function (name) {
      var v = form.elements[name].value.trim();
      if (v) p[name] = name === 'method' ? v.toUpperCase() : v;
    });
    if (p.scope) { delete p.method; delete p.route; delete p.tenant; delete p.principal; }
    return p;
  }

  function renderKey(view) {
    var dl = $('key-record');
    dl.textContent = '';
    var rows = [
      ['Scope', view.scope], ['Key hash (in logs)', view.keyHash], ['State', view.state],
      ['Response status', view.responseStatus], ['Created', when(view.createdAt)], ['Completed', when(view.completedAt)],
      ['Expires', when(view.expiresAt)], ['Expired', view.expired ? 'yes' : 'no'],
      ['Lease remaining', view.state === 'started' ? age(view.leaseRemainingMs) : '–'],
      ['Stored answer', view.encrypted ? 'encrypted' + (view.keyId ? ' (key ' + view.keyId + ')' : '') + ', ' + view.responseBodyBytes + ' bytes' : view.responseBodyBytes + ' bytes'],
      ['Replays', 'not counted by the library'],
    ];
    rows.forEach(function (r) {
      dl.appendChild(el('dt', { text: r[0] }));
      dl.appendChild(el('dd', { text: r[1] === null || r[1] === undefined ? '–' : String(r[1]) }));
    });
    $('key-result').hidden = false;
  }

  function lookUp(event) {
    event.preventDefault();
    var p = keyParams();
    if (!p.key) { say('Enter the Idempotency-Key.', true); $('key-key').focus(); return; }
    state.key = p;
    call('GET', '/idempotency', p).then(function (view) {
      renderKey(view);
      say('Key found in scope ' + view.scope + '.');
    }).catch(function (e) {
      $('key-result').hidden = true;
      say(e.status === 404 ? 'No record for this scope and key.' : e.message, true);
    });
  }

  function evict() {
    var p = state.key;
    if (!p) return;
    act('Evict this idempotency key? The next request with it runs the handler again.', 'DELETE', '/idempotency', p, function () {
      $('key-result').hidden = true;
      return 'Key evicted.';
    });
  }

  function schedule() {
    if (state.timer) clearInterval(state.timer);
    state.timer = $('live').checked ? setInterval(refresh, refreshMs) : null;
  }

  $('refresh').addEventListener('click', refresh);
  $('live').addEventListener('change', schedule);
  $('recent-status').addEventListener('change', function (e) { state.recentStatus = e.target.value; refresh(); });
  $('inbox-consumer').addEventListener('change', function (e) { state.consumer = e.target.value; refresh(); });
  $('detail-close').addEventListener('click', function () { $('detail').hidden = true; });
  $('requeue-all').addEventListener('click', function () {
    act('Requeue every dead message?', 'POST', '/outbox/requeue-dead', null, function (b) { return b.requeued + ' dead messages re-queued.'; });
  });
  $('purge-all').addEventListener('click', function () {
    act('Purge every dead message? They are deleted for good.', 'DELETE', '/outbox/dead', null, function (b) { return b.purged + ' dead messages purged.'; });
  });
  $('dead-filter').addEventListener('submit', countMatching);
  $('dead-filter').addEventListener('input', function () { filterReady(null); $('filter-result').textContent = ''; });
  $('filter-requeue').addEventListener('click', function () { actOnMatching('requeue'); });
  $('filter-purge').addEventListener('click', function () { actOnMatching('purge'); });
  $('key-form').addEventListener('submit', lookUp);
  $('key-evict').addEventListener('click', evict);
  refresh();
  schedule();
})();
`;
