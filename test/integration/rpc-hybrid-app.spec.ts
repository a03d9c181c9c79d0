import type { INestApplication } from '@nestjs/common';
import type { ClientProxy } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { lastValueFrom } from 'rxjs';
import type { DataSource } from 'typeorm';
import type { IdempotencyContextType } from '../../lib';
import { postOrder, startHybridApp } from '../fixtures/rpc/hybrid-app';
import {
  createTestDatabase,
  databaseKinds,
  openDataSource,
  placeholder,
  type TestDatabase,
} from '../support/databases';

/** What the tenant resolver was told, per context type. */
const TOLD: Array<[IdempotencyContextType, unknown]> = [];

/**
 * One process, one IdempotencyModule, HTTP and a TCP microservice (a hybrid app): each context
 * keeps its own records, so one key used over HTTP and over RPC is two requests, each replayed in
 * its own context; the tenant resolver is told which context asks.
 */
describe.each(databaseKinds())('hybrid app (HTTP + RPC), %s', (kind) => {
  let db: TestDatabase;
  let ds: DataSource;
  let app: INestApplication;
  let client: ClientProxy;
  let url: string;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    ({ app, url, client } = await startHybridApp({
      dbUrl: db.url,
      idempotency: {
        tenantResolver: (req: any, type: IdempotencyContextType) => {
          TOLD.push([type, type === 'rpc' ? req.pattern : req.method]);
          return 'acme';
        },
      },
    }));
    ds = await openDataSource(db.url);
  }, 300_000);

  afterAll(async () => {
    client?.close();
    await app?.close();
    await ds?.destroy();
    await db?.drop();
  });

  const effects = async (note: string): Promise<number> =>
    (await ds.query(`SELECT id FROM inbox_effects WHERE note = ${placeholder(kind, 0)}`, [note]))
      .length;

  it('one key over HTTP and over RPC: two requests, each replayed in its own context', async () => {
    const key = randomUUID();
    const note = randomUUID();
    const post = () => postOrder(url, key, note);
    const send = () => lastValueFrom(client.send('hybrid.orders.create', { note, key }));
    const h1 = await post();
    const r1 = await send();
    expect(r1).toMatchObject({ via: 'rpc' });
    expect(h1.body).toMatchObject({ via: 'http' });
    const h2 = await post();
    const r2 = await send();
    expect(h2.body).toEqual(h1.body);
    expect(h2.replayed).toBe('true');
    expect(r2).toEqual(r1);
    expect(await effects(note)).toBe(2);
    expect(TOLD).toEqual(
      expect.arrayContaining([
        ['http', 'POST'],
        ['rpc', 'hybrid.orders.create'],
      ]),
    );
  });
});
