import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { TransactionHost } from '@nestjs-cls/transactional';
import { performance } from 'node:perf_hooks';
import { OutboxService } from '../../lib';
import type { OutboxMessage, OutboxOptions } from '../../lib';
import { RelayBenchModule } from '../outbox-relay/relay-bench.module';
import type { BenchContext, BenchReport, BenchSuite } from '../support/bench-suite';
import { type BenchDatabaseKind, createScratchDatabase } from '../support/scratch-database';

/*
 * Commit order per partition key (outbox.ordered, the default since issue 52) against the
 * explicit opt-out (ordered: false: rows inserted at add(), no key lock, no ordering in the claim),
 * in one run on one database (--db=postgres by default):
 * - enqueue latency: one transaction with one add() and its COMMIT, `writers` concurrent writers,
 *   keyed (8 keys, so writers of a key meet) and keyless;
 * - relay throughput: messages per second from the first claim to the last publish, one relay
 *   in this process with an in-memory publisher, keyed (8 keys) and keyless.
 */

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

async function runCase(
  kind: BenchDatabaseKind,
  ctx: BenchContext,
  ordered: boolean,
  keyed: boolean,
  n: number,
  writers: number,
): Promise<{ p50: number; p99: number; perSecond: number }> {
  const scratch = await createScratchDatabase(kind);
  ctx.onCleanup(() => scratch.drop());
  let published = 0;
  let first = 0;
  let last = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const publisher = {
    publish: async (_m: OutboxMessage) => {
      if (!first) first = performance.now();
      published++;
      last = performance.now();
      if (published >= n) done();
    },
  };
  const outbox: OutboxOptions = {
    ordered,
    relayEnabled: false,
    publisher,
    batchSize: 100,
    pollIntervalMs: 20,
  };
  const app = await NestFactory.createApplicationContext(
    RelayBenchModule.register(scratch.url, outbox),
    {
      logger: false,
    },
  );
  await app.init();
  try {
    const svc = app.get(OutboxService);
    const tx = app.get(TransactionHost);
    const times: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: writers }, async () => {
        while (next < n) {
          const i = next++;
          const t = performance.now();
          await tx.withTransaction(() =>
            svc.add({
              type: 'bench.order',
              partitionKey: keyed ? `k${i % 8}` : null,
              payload: { i },
            }),
          );
          times.push(performance.now() - t);
        }
      }),
    );
    times.sort((a, b) => a - b);
    // The relay starts once every message is in: throughput of the backlog alone.
    await app.close();
    const relayApp = await NestFactory.createApplicationContext(
      RelayBenchModule.register(scratch.url, { ...outbox, relayEnabled: true }),
      { logger: false },
    );
    await relayApp.init();
    await all;
    await relayApp.close();
    return {
      p50: pct(times, 50),
      p99: pct(times, 99),
      perSecond: Math.round((n / (last - first || 1)) * 1000),
    };
  } catch (e) {
    await app.close().catch(() => undefined);
    throw e;
  }
}

const suite: BenchSuite = {
  description:
    'outbox commit order per key (default) vs ordered:false: enqueue latency and relay throughput, keyed vs keyless',
  maxDurationMs: 600_000,
  async run(ctx): Promise<BenchReport> {
    const kind = (ctx.args.find((a) => a.startsWith('--db='))?.slice(5) ??
      'postgres') as BenchDatabaseKind;
    const n = ctx.quick ? 200 : 2000;
    const writers = 8;
    const rows: Array<Array<string | number>> = [];
    const data: Record<string, unknown> = {};
    for (const ordered of [false, true]) {
      for (const keyed of [true, false]) {
        const label = `${ordered ? 'ordered (default)' : 'ordered: false'} / ${keyed ? 'keyed (8 keys)' : 'keyless'}`;
        ctx.log(label);
        const r = await runCase(kind, ctx, ordered, keyed, n, writers);
        data[label] = r;
        rows.push([label, r.p50.toFixed(2), r.p99.toFixed(2), r.perSecond]);
      }
    }
    return {
      tables: [
        {
          title: `outbox order on ${kind}: ${n} messages, ${writers} concurrent writers (1 message per transaction)`,
          columns: ['mode', 'enqueue p50 ms', 'enqueue p99 ms', 'relay msg/s'],
          rows,
        },
      ],
      notes: [
        "ordered: false is the behaviour before commit order (rows inserted at add(), no key lock, a key's messages in any order).",
        'Keyed relay throughput under ordering is bounded by one message per key per claim (8 keys here).',
      ],
      data,
    };
  },
};

export default suite;
