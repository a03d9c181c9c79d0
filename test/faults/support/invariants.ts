import type { DataSource } from 'typeorm';
import { placeholder, type TestDatabaseKind } from '../../support/databases';
import {
  type Attempt,
  header,
  type KeyOutcome,
  pool,
  postOnce,
  paymentBody,
  sleep,
} from './fault-client';

type Kind = TestDatabaseKind['name'];

/** One scenario's world: its database, the live processes, and the prefix of its customer ids and keys. */
export interface Scenario {
  ds: DataSource;
  kind: Kind;
  /** Customer ids (and keys: `key-<customerId>`) of the scenario start with it; no `_`, `%` or `[`. */
  prefix: string;
  /** Live processes to replay through. */
  live: () => string[] | Promise<string[]>;
  /** Ready messages in the broker queue (the relay → consumer path is drained when 0). */
  queueDepth: () => Promise<number>;
}

export const keyOf = (customerId: string) => `key-${customerId}`;

/** What the invariants found, for the test's report line. */
export interface InvariantReport {
  keys: number;
  payments: number;
  ledgerEntries: number;
  outboxSent: number;
}

const num = (v: unknown) => Number(v);

async function rows<T>(s: Scenario, sql: string, params: unknown[]): Promise<T[]> {
  return s.ds.query(sql, params);
}

const p = (s: Scenario, i: number) => placeholder(s.kind, i);

async function paymentsOf(s: Scenario): Promise<Map<string, string[]>> {
  const list = await rows<{ id: string; customer_id: string }>(
    s,
    `SELECT id, customer_id FROM payments WHERE customer_id LIKE ${p(s, 0)}`,
    [`${s.prefix}%`],
  );
  const byCustomer = new Map<string, string[]>();
  for (const r of list) {
    byCustomer.set(r.customer_id, [...(byCustomer.get(r.customer_id) ?? []), r.id]);
  }
  return byCustomer;
}

async function outboxOf(s: Scenario): Promise<Array<{ pid: string; status: string }>> {
  // The payload is the JSON of payment.captured: its customerId names the scenario, so an event
  // whose payment does not exist (a ghost from a rolled-back transaction) is found too.
  return rows(
    s,
    `SELECT partition_key AS pid, status FROM outbox_messages
      WHERE type = 'payment.captured' AND payload LIKE ${p(s, 0)}`,
    [`%"customerId":"${s.prefix}%`],
  );
}

async function ledgerOf(s: Scenario): Promise<Map<string, number>> {
  const list = await rows<{ pid: string; n: unknown }>(
    s,
    `SELECT payment_id AS pid, COUNT(*) AS n FROM ledger_entries WHERE customer_id LIKE ${p(s, 0)} GROUP BY payment_id`,
    [`${s.prefix}%`],
  );
  return new Map(list.map((r) => [r.pid, num(r.n)]));
}

async function recordsOf(s: Scenario): Promise<Array<{ k: string; state: string }>> {
  return rows(
    s,
    `SELECT idempotency_key AS k, state FROM idempotency_records WHERE idempotency_key LIKE ${p(s, 0)}`,
    [`key-${s.prefix}%`],
  );
}

/** The outbox and inbox rows of a few payments, for a failure message. */
async function describePayments(s: Scenario, ids: string[]): Promise<string> {
  const out: string[] = [];
  for (const id of ids) {
    const events = await rows<Record<string, unknown>>(
      s,
      `SELECT id, status, attempts, last_error, lease_owner FROM outbox_messages WHERE partition_key = ${p(s, 0)}`,
      [id],
    );
    const inbox = events[0]
      ? await rows<Record<string, unknown>>(
          s,
          `SELECT consumer, status, attempts, last_error FROM inbox_messages WHERE message_id = ${p(s, 0)}`,
          [events[0].id],
        )
      : [];
    out.push(`payment ${id}: outbox ${JSON.stringify(events)}, inbox ${JSON.stringify(inbox)}`);
  }
  return out.join('; ');
}

const idOf = (a: Attempt) => JSON.parse(a.body!.toString('utf8')).id as string;

/**
 * The invariants of the fault suite, checked after a scenario:
 * 1. every payment a client was told about (201) exists exactly once, and every key of the
 *    scenario has exactly one payment (each client retried until it got its 201); every 201 a
 *    client saw for a key is the same answer, byte for byte;
 * 2. no outbox message is lost or invented: each payment has exactly one `payment.captured`
 *    row, no row exists for a payment that does not, and all of them end up sent;
 * 3. every payment has exactly one ledger entry (none missing, none doubled by redeliveries);
 * 4. no key stays blocked: every record is completed and a retry with the key now replays the
 *    stored 201 at once (no 409 once the scenario is over and its leases have lapsed).
 */
export async function assertInvariants(
  s: Scenario,
  outcomes: KeyOutcome[],
  settleTimeoutMs = 120_000,
): Promise<InvariantReport> {
  // 1. Told answers against the payments table.
  for (const o of outcomes) {
    if (!o.created) {
      const tail = o.attempts.slice(-3).map((a) => a.status ?? a.error);
      throw new Error(
        `key ${o.key} never got its 201 after ${o.attempts.length} attempts (last: ${tail.join(', ')})`,
      );
    }
    const created = o.attempts.filter((a) => a.status === 201);
    for (const a of created) {
      if (!a.body!.equals(o.created.body!)) {
        throw new Error(`key ${o.key}: two different 201 answers: ${a.body} / ${o.created.body}`);
      }
    }
    for (const a of o.attempts) {
      if (a.status !== undefined && a.status !== 201 && a.status !== 409 && a.status < 500) {
        throw new Error(
          `key ${o.key}: unexpected ${a.status} ${a.body?.toString('utf8').slice(0, 300)}`,
        );
      }
    }
  }
  const payments = await paymentsOf(s);
  const byCustomer = new Map(outcomes.map((o) => [o.customerId, o]));
  for (const o of outcomes) {
    const ids = payments.get(o.customerId) ?? [];
    expect({ key: o.key, payments: ids }).toEqual({ key: o.key, payments: [idOf(o.created!)] });
  }
  for (const customer of payments.keys()) {
    if (!byCustomer.has(customer)) {
      throw new Error(`a payment exists for ${customer}, which no client asked for`);
    }
  }
  const paymentIds = new Set([...payments.values()].flat());

  // 2 + 3. The event pipeline drains: every event sent, every payment in the ledger, queue empty.
  const deadline = Date.now() + settleTimeoutMs;
  let outbox = await outboxOf(s);
  let ledger = await ledgerOf(s);
  for (;;) {
    const settled =
      outbox.length >= paymentIds.size &&
      outbox.every((r) => r.status === 'sent') &&
      [...paymentIds].every((id) => ledger.has(id)) &&
      (await s.queueDepth()) === 0;
    if (settled) break;
    if (Date.now() > deadline) {
      const pending = outbox.filter((r) => r.status !== 'sent').length;
      const missingIds = [...paymentIds].filter((id) => !ledger.has(id));
      const missing = missingIds.length;
      throw new Error(
        `the event pipeline did not settle in ${settleTimeoutMs} ms: ${outbox.length} outbox rows for ${paymentIds.size} payments, ${pending} not sent (${[
          ...new Set(outbox.map((r) => r.status)),
        ].join(
          '/',
        )}), ${missing} payments without a ledger entry, queue depth ${await s.queueDepth()}; ${await describePayments(s, missingIds.slice(0, 3))}`,
      );
    }
    await sleep(250);
    outbox = await outboxOf(s);
    ledger = await ledgerOf(s);
  }
  // A late redelivery would show up now.
  await sleep(500);
  outbox = await outboxOf(s);
  ledger = await ledgerOf(s);
  const outboxCount = new Map<string, number>();
  for (const r of outbox) outboxCount.set(r.pid, (outboxCount.get(r.pid) ?? 0) + 1);
  const ghostEvents = [...outboxCount.keys()].filter((id) => !paymentIds.has(id));
  expect(ghostEvents).toEqual([]);
  const eventsNotOnce = [...paymentIds].filter((id) => outboxCount.get(id) !== 1);
  expect(eventsNotOnce).toEqual([]);
  expect(outbox.filter((r) => r.status !== 'sent')).toEqual([]);
  const ghostEntries = [...ledger.keys()].filter((id) => !paymentIds.has(id));
  expect(ghostEntries).toEqual([]);
  const entriesNotOnce = [...paymentIds]
    .filter((id) => ledger.get(id) !== 1)
    .map((id) => ({ payment: id, entries: ledger.get(id) ?? 0 }));
  expect(entriesNotOnce).toEqual([]);

  // 4. No key stays blocked: all completed, and a retry replays at once.
  const records = await recordsOf(s);
  expect(records.filter((r) => r.state !== 'completed')).toEqual([]);
  const live = await s.live();
  await pool(outcomes, 16, async (o, i) => {
    let a = await postOnce(live[i % live.length], o.key, paymentBody(o.customerId));
    // A connection error is no answer: a client sends the request again.
    for (let n = 1; n < 3 && a.error; n++) {
      a = await postOnce(live[(i + n) % live.length], o.key, paymentBody(o.customerId));
    }
    if (
      a.status !== 201 ||
      header(a, 'idempotency-replayed') !== 'true' ||
      !a.body!.equals(o.created!.body!)
    ) {
      throw new Error(
        `key ${o.key} is not replayed after the scenario: ${a.status ?? a.error} ${a.body?.toString('utf8').slice(0, 200)}`,
      );
    }
  });
  return {
    keys: outcomes.length,
    payments: paymentIds.size,
    ledgerEntries: [...ledger.values()].reduce((x, y) => x + y, 0),
    outboxSent: outbox.length,
  };
}
