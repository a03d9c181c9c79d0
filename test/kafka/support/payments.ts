import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { placeholder, type TestDatabaseKind } from '../../support/databases';
import { eventually } from '../../support/eventually';

/** POST /payments with an idempotency key; resolves with the status and the body. */
export async function pay(
  url: string,
  key: string,
  customerId: string,
): Promise<{ status: number; body: any }> {
  const r = await fetch(`${url}/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ amount: 10, currency: 'EUR', customerId }),
  });
  const text = await r.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the failure message
  }
  return { status: r.status, body };
}

/** One payment sent twice at once with its key (a client retrying): the payment's id. */
export async function payTwice(url: string, customerId: string): Promise<string> {
  const key = randomUUID();
  const [a, b] = await Promise.all([pay(url, key, customerId), pay(url, key, customerId)]);
  // The second copy is either replayed (201) or, while the first is in flight, answered 409;
  // one more send after both gives the stored answer.
  const ok = [a, b].find((r) => r.status === 201) ?? (await pay(url, key, customerId));
  if (ok.status !== 201) throw new Error(`POST /payments: ${ok.status} ${JSON.stringify(ok.body)}`);
  const again = await pay(url, key, customerId);
  if (again.status !== 201 || again.body.id !== ok.body.id) {
    throw new Error(`the retry of ${key} was not replayed: ${again.status}`);
  }
  return ok.body.id as string;
}

/** The ledger entries of a payment (GET /ledger?paymentId=). */
export async function ledgerOf(url: string, paymentId: string): Promise<any[]> {
  const r = await fetch(`${url}/ledger?paymentId=${encodeURIComponent(paymentId)}`);
  if (r.status !== 200) throw new Error(`GET /ledger: ${r.status}`);
  return (await r.json()) as any[];
}

/** The notifications of a payment (the second consuming service, in a consumer group of its own). */
export async function notificationsOf(url: string, paymentId: string): Promise<any[]> {
  const r = await fetch(`${url}/notifications?paymentId=${encodeURIComponent(paymentId)}`);
  if (r.status !== 200) throw new Error(`GET /notifications: ${r.status}`);
  return (await r.json()) as any[];
}

/**
 * Outbox rows not yet published (pending) of the app's database; with `keys`, only those of
 * these partition keys (the sample app's key is the payment id).
 */
export async function pendingOutbox(
  ds: DataSource,
  keys?: { kind: TestDatabaseKind['name']; ids: string[] },
): Promise<number> {
  const where = keys
    ? ` AND partition_key IN (${keys.ids.map((_, i) => placeholder(keys.kind, i)).join(', ')})`
    : '';
  const rows = await ds.query(
    `SELECT COUNT(*) AS n FROM outbox_messages WHERE status = 'pending'${where}`,
    keys?.ids ?? [],
  );
  return Number(rows[0].n ?? rows[0].N);
}

/** Outbox rows the relay gave up on. */
export async function deadOutbox(ds: DataSource): Promise<number> {
  const rows = await ds.query(`SELECT COUNT(*) AS n FROM outbox_messages WHERE status = 'dead'`);
  return Number(rows[0].n ?? rows[0].N);
}

/** The app's `inbox_duplicates` counter of the ledger consumer (GET /metrics). */
export async function ledgerDuplicates(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('inbox_duplicates') && l.includes('consumer="ledger"'));
  return line ? Number(line.trim().split(/\s+/).pop()) : 0;
}

/** The amounts of the refunds {@link payWithRefunds} makes, in order (the payment is 10 EUR). */
export const REFUNDS = [1, 2];
/** Events per payment of {@link payWithRefunds}: `payment.captured`, then each refund's `payment.refunded`. */
export const EVENTS_PER_PAYMENT = 1 + REFUNDS.length;

/** POST /payments/:id/refunds, sent twice with its key (a client retrying): the refund's id. */
export async function refundTwice(url: string, paymentId: string, amount: number): Promise<string> {
  const key = randomUUID();
  const send = async () => {
    const r = await fetch(`${url}/payments/${paymentId}/refunds`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ amount }),
    });
    return { status: r.status, body: (await r.json().catch(() => undefined)) as any };
  };
  const first = await send();
  if (first.status !== 201) {
    throw new Error(
      `POST /payments/${paymentId}/refunds: ${first.status} ${JSON.stringify(first.body)}`,
    );
  }
  const again = await send();
  if (again.status !== 201 || again.body.id !== first.body.id) {
    throw new Error(`the retry of refund ${key} was not replayed: ${again.status}`);
  }
  return first.body.id as string;
}

/**
 * A payment sent twice with its key, then its refunds ({@link REFUNDS}) one after the other, each
 * sent twice with its own key: {@link EVENTS_PER_PAYMENT} events with the payment's partition key,
 * written by sequential transactions (insert order = commit order). The payment's id.
 */
export async function payWithRefunds(url: string, customerId: string): Promise<string> {
  const id = await payTwice(url, customerId);
  for (const amount of REFUNDS) await refundTwice(url, id, amount);
  return id;
}

/**
 * The payment's ledger, applied exactly once and in the order its events were written: one
 * entry per event (a capture of 10, then a refund per amount of {@link REFUNDS}), and ordered by
 * `position` (the entry's place among the payment's entries when the consumer applied it,
 * 1, 2, 3…) they are the capture then the refunds as made. A redelivered older event applied
 * after a newer one would show as an extra entry or a position out of place.
 */
export function expectAppliedInOrder(entries: any[], paymentId: string): void {
  const applied = [...entries]
    .sort((a, b) => a.position - b.position)
    .map((e) => ({
      paymentId: e.paymentId,
      position: e.position,
      entryType: e.entryType,
      amount: e.amount,
    }));
  const written = [
    { entryType: 'capture', amount: 10 },
    ...REFUNDS.map((amount) => ({ entryType: 'refund', amount })),
  ].map((e, i) => ({ paymentId, position: i + 1, ...e }));
  expect(applied).toEqual(written);
}

/** Waits (60 s at most) until each of the payments has its {@link EVENTS_PER_PAYMENT} ledger entries. */
export async function everyPaymentLedgered(url: string, payments: string[]): Promise<void> {
  await eventually(
    `${EVENTS_PER_PAYMENT} ledger entries for each of the ${payments.length} payments`,
    async () => {
      for (const id of payments) {
        if ((await ledgerOf(url, id)).length < EVENTS_PER_PAYMENT) return false;
      }
      return true;
    },
    60_000,
    250,
  );
}
