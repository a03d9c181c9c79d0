import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createTestDatabase, openDataSource, type TestDatabase } from '../support/databases';
import { type AppProcess, spawnSampleApp } from '../support/sample-app';
import { postJson, sleep } from '../fixtures/gate/http';

/**
 * What a running app's console shows at the default level with Nest's text logger (issue 18,
 * item 5): the sample app as a real process (LOG_LEVEL=log, text), one order placed, replayed,
 * its key reused with another body, its outbox event published. Every line is one line of
 * Nest's format; per-request and per-batch events (debug) are absent; the mismatch that matters
 * is there, once. The published outbox row counts its successful attempt.
 */
describe('default logging of the sample app (sqlite, text console)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let app: AppProcess;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    app = await spawnSampleApp({ DB_URL: db.url, LOG_LEVEL: 'log', LOG_FORMAT: 'text' });
    ds = await openDataSource(db.url);
  });

  afterAll(async () => {
    await app?.kill();
    await ds?.destroy();
    await db?.drop();
  });

  it('one line per event that matters, none per request or batch', async () => {
    const key = randomUUID();
    const order = { amount: 7.5, currency: 'USD', customerId: `log-${key.slice(0, 8)}` };
    const first = await postJson(`${app.url}/payments`, key, order);
    expect(first.status).toBe(201);
    const replay = await postJson(`${app.url}/payments`, key, order);
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    const reused = await postJson(`${app.url}/payments`, key, { ...order, amount: 8 });
    expect(reused.status).toBe(422);

    let sent: Array<{ status: string; attempts: number }> = [];
    for (let i = 0; i < 200 && !sent.length; i++) {
      sent = await ds.query(`SELECT status, attempts FROM outbox_messages WHERE status = 'sent'`);
      if (!sent.length) await sleep(50);
    }
    expect(sent).toHaveLength(1);
    expect(Number(sent[0].attempts)).toBe(1);
    await sleep(1500); // a few relay passes more

    // eslint-disable-next-line no-control-regex
    const plain = app.output().replace(/\x1b\[[0-9;]*m/g, ''); // colours, when the console has them
    const lines = plain.split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBeGreaterThan(0);
    // Nest's text format, one line each: a pretty-printed object would add lines without it.
    for (const line of lines) expect(line).toMatch(/^\[Nest\] \d+ +- /);
    const text = lines.join('\n');
    for (const perRequest of ['idempotency.reserved', 'idempotency.replay', 'outbox.batch']) {
      expect(text).not.toContain(perRequest);
    }
    expect(
      lines.filter((l) => l.includes('idempotency.key-reused-with-other-request')),
    ).toHaveLength(1);
    expect(text).not.toContain(key);
  });
});
