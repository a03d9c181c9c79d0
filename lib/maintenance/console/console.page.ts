/** Escapes text for an HTML attribute or element. */
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The console's page: static markup the script fills in. `path` is where the page was served
 * (e.g. `/admin/console`); its script and style are beside it.
 */
export function consolePage(path: string, refreshSeconds: number): string {
  const base = escapeHtml(path);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>Exactly-once console</title>
<link rel="stylesheet" href="${base}/console.css">
<script src="${base}/console.js" defer></script>
</head>
<body data-refresh-seconds="${refreshSeconds}">
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <h1>Exactly-once console</h1>
  <nav aria-label="Sections">
    <a href="#outbox">Outbox</a> <a href="#dead">Dead letters</a> <a href="#inbox">Inbox</a> <a href="#keys">Keys</a>
  </nav>
  <div class="controls">
    <label><input type="checkbox" id="live" checked> Live refresh every ${refreshSeconds} s</label>
    <button type="button" id="refresh">Refresh now</button>
    <span id="updated" class="muted">Not loaded yet</span>
  </div>
</header>
<p id="status" role="status" aria-live="polite" class="status"></p>
<main id="main">
<section id="outbox" aria-labelledby="outbox-h">
  <h2 id="outbox-h">Outbox</h2>
  <dl class="cards">
    <div class="card"><dt>Pending</dt><dd id="count-pending">–</dd></div>
    <div class="card"><dt>Sent</dt><dd id="count-sent">–</dd></div>
    <div class="card"><dt>Dead</dt><dd id="count-dead">–</dd></div>
    <div class="card"><dt>Oldest pending</dt><dd id="oldest-pending">–</dd></div>
  </dl>
  <h3 id="chart-h">Sent per minute, last 15 minutes</h3>
  <div id="chart" class="chart"></div>
  <h3 id="recent-h">Recent messages</h3>
  <div class="filters">
    <label for="recent-status">Status</label>
    <select id="recent-status">
      <option value="">all</option><option value="pending">pending</option>
      <option value="sent">sent</option><option value="dead">dead</option>
    </select>
  </div>
  <div class="scroll"><table id="recent" aria-labelledby="recent-h">
    <thead><tr><th scope="col">Id</th><th scope="col">Type</th><th scope="col">Partition key</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last error</th><th scope="col">Created</th></tr></thead>
    <tbody></tbody>
  </table></div>
  <section id="detail" aria-labelledby="detail-h" hidden>
    <h3 id="detail-h" tabindex="-1">Message</h3>
    <h4 id="detail-history-h">Failed attempts (newest 10)</h4>
    <div class="scroll"><table id="detail-history" aria-labelledby="detail-history-h">
      <thead><tr><th scope="col">Attempt</th><th scope="col">At</th><th scope="col">Relay</th><th scope="col">Error class</th><th scope="col">Message</th></tr></thead>
      <tbody></tbody>
    </table></div>
    <pre id="detail-body" tabindex="0"></pre>
    <button type="button" id="detail-close">Close</button>
  </section>
</section>
<section id="dead" aria-labelledby="dead-h">
  <h2 id="dead-h">Dead letters</h2>
  <div class="actions">
    <button type="button" id="requeue-all">Requeue all dead</button>
    <button type="button" id="purge-all" class="danger">Purge all dead</button>
  </div>
  <form id="dead-filter" class="key-form" novalidate aria-labelledby="dead-filter-h">
    <h3 id="dead-filter-h">Requeue or purge by filter</h3>
    <p class="muted">Every criterion given must hold. Count first: the actions act on what the filter hits.</p>
    <div class="grid">
      <label for="filter-type">Type</label><input id="filter-type" name="type" autocomplete="off" placeholder="payment.captured">
      <label for="filter-key">Partition key</label><input id="filter-key" name="partitionKey" autocomplete="off">
      <label for="filter-after">Failed after (local time)</label><input id="filter-after" name="failedAfter" type="datetime-local" step="1">
      <label for="filter-before">Failed before (local time)</label><input id="filter-before" name="failedBefore" type="datetime-local" step="1">
      <label for="filter-error">Error contains</label><input id="filter-error" name="error" autocomplete="off">
    </div>
    <button type="submit" id="filter-count">Count matching</button>
    <button type="button" id="filter-requeue" disabled>Requeue matching</button>
    <button type="button" id="filter-purge" class="danger" disabled>Purge matching</button>
    <p id="filter-result" class="muted" aria-live="polite"></p>
  </form>
  <div class="scroll"><table id="dead-list" aria-labelledby="dead-h">
    <thead><tr><th scope="col">Id</th><th scope="col">Type</th><th scope="col">Partition key</th><th scope="col">Attempts</th><th scope="col">Last error</th><th scope="col">Actions</th></tr></thead>
    <tbody></tbody>
  </table></div>
</section>
<section id="inbox" aria-labelledby="inbox-h">
  <h2 id="inbox-h">Inbox</h2>
  <div class="scroll"><table id="consumers" aria-label="Inbox records per consumer">
    <thead><tr><th scope="col">Consumer</th><th scope="col">Processed</th><th scope="col">Retrying</th><th scope="col">Failed</th></tr></thead>
    <tbody></tbody>
  </table></div>
  <div class="filters">
    <label for="inbox-consumer">Consumer</label>
    <select id="inbox-consumer"><option value="">all</option></select>
  </div>
  <h3 id="inbox-failed-h">Failed and retrying</h3>
  <div class="scroll"><table id="inbox-failed" aria-labelledby="inbox-failed-h">
    <thead><tr><th scope="col">Consumer</th><th scope="col">Message id</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last error</th><th scope="col">Received</th><th scope="col">Actions</th></tr></thead>
    <tbody></tbody>
  </table></div>
  <p class="muted">Reset deletes a failed record: once the handler is fixed, reset it, then requeue its outbox message, and the next delivery runs the handler again.</p>
  <h3 id="inbox-recent-h">Recently processed</h3>
  <div class="scroll"><table id="inbox-recent" aria-labelledby="inbox-recent-h">
    <thead><tr><th scope="col">Consumer</th><th scope="col">Message id</th><th scope="col">Attempts</th><th scope="col">Received</th><th scope="col">Processed</th></tr></thead>
    <tbody></tbody>
  </table></div>
</section>
<section id="keys" aria-labelledby="keys-h">
  <h2 id="keys-h">Idempotency keys</h2>
  <form id="key-form" class="key-form" novalidate>
    <p class="muted">The scope as stored (tenant|principal|METHOD /route), or the method and route (with tenant and principal if your app resolves them).</p>
    <div class="grid">
      <label for="key-scope">Scope</label><input id="key-scope" name="scope" autocomplete="off" placeholder="-|-|POST /payments">
      <label for="key-method">Method</label><input id="key-method" name="method" autocomplete="off" placeholder="POST">
      <label for="key-route">Route</label><input id="key-route" name="route" autocomplete="off" placeholder="/payments">
      <label for="key-tenant">Tenant</label><input id="key-tenant" name="tenant" autocomplete="off">
      <label for="key-principal">Principal</label><input id="key-principal" name="principal" autocomplete="off">
      <label for="key-key">Idempotency-Key</label><input id="key-key" name="key" autocomplete="off" required>
    </div>
    <button type="submit" id="key-lookup">Look up</button>
  </form>
  <div id="key-result" hidden>
    <dl id="key-record" class="record"></dl>
    <button type="button" id="key-evict" class="danger">Evict this key</button>
  </div>
</section>
</main>
</body>
</html>
`;
}
