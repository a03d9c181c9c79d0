import { ReplayCache } from '../../lib/persistence/replay.cache';
import { IdempotencyLedger, type LedgerRequest } from '../../lib/persistence/idempotency-ledger';
import type {
  IdempotencyRow,
  IdempotencySql,
  ReserveOutcome,
  ReserveParams,
} from '../../lib/persistence/dialects';

/**
 * The ledger's decisions against an in-memory ledger table (pure logic: the statements' own
 * behaviour on each database is proven by test/integration/gate-ledger.spec.ts).
 */
interface MemRecord {
  id: string;
  scope: string;
  key: string;
  state: 'started' | 'completed';
  requestHash: Buffer;
  leaseToken: string | null;
  lockedUntil: number | null;
  expiresAt: number;
  status: number | null;
  headers: string | null;
  body: Buffer | null;
}

class MemoryLedgerSql implements IdempotencySql {
  now = 1_000_000;
  records = new Map<string, MemRecord>();
  /** Keys whose reservation is "uncommitted in another transaction". */
  locked = new Set<string>();
  /** Run before the next find() (a concurrent change between two statements). */
  beforeFind: (() => void) | undefined;
  /** Whether reserve() returns the existing row in the same round trip (PostgreSQL, SQL Server). */
  rowInReserve = true;
  private seq = 0;
  calls: string[] = [];

  private row(r: MemRecord): IdempotencyRow {
    return {
      id: r.id,
      state: r.state,
      requestHash: r.requestHash,
      responseStatus: r.status,
      responseHeaders: r.headers,
      responseBody: r.body,
      leaseToken: r.leaseToken,
      expired: r.expiresAt <= this.now,
      leaseRemainingMs:
        r.state === 'started' && r.lockedUntil !== null ? Math.max(0, r.lockedUntil - this.now) : 0,
    };
  }

  put(scope: string, key: string, r: Partial<MemRecord>): MemRecord {
    const rec: MemRecord = {
      id: String(++this.seq),
      scope,
      key,
      state: 'completed',
      requestHash: HASH_A,
      leaseToken: null,
      lockedUntil: null,
      expiresAt: this.now + 60_000,
      status: 201,
      headers: '[]',
      body: Buffer.from('{"id":1}'),
      ...r,
    };
    this.records.set(`${scope}|${key}`, rec);
    return rec;
  }

  async reserve(_e: unknown, p: ReserveParams): Promise<ReserveOutcome> {
    this.calls.push('reserve');
    const k = `${p.scope}|${p.key}`;
    if (this.locked.has(k)) return { outcome: 'locked' };
    const existing = this.records.get(k);
    if (existing) {
      return { outcome: 'exists', row: this.rowInReserve ? this.row(existing) : undefined };
    }
    const rec = this.put(p.scope, p.key, {
      state: 'started',
      requestHash: p.requestHash,
      leaseToken: p.leaseToken,
      lockedUntil: this.now + p.leaseMs,
      expiresAt: this.now + p.ttlMs,
      status: null,
      body: null,
      headers: null,
    });
    return { outcome: 'inserted', id: rec.id };
  }
  async find(_e: unknown, scope: string, key: string) {
    this.calls.push('find');
    this.beforeFind?.();
    this.beforeFind = undefined;
    const r = this.records.get(`${scope}|${key}`);
    return r ? this.row(r) : undefined;
  }
  async takeOver(_e: unknown, id: string, expectedToken: string | null, p: ReserveParams) {
    this.calls.push('takeOver');
    const r = [...this.records.values()].find((x) => x.id === id);
    if (!r) return false;
    const lapsed =
      r.state === 'started' && (r.lockedUntil ?? 0) <= this.now && r.leaseToken === expectedToken;
    if (!(r.expiresAt <= this.now || lapsed)) return false;
    Object.assign(r, {
      state: 'started',
      requestHash: p.requestHash,
      leaseToken: p.leaseToken,
      lockedUntil: this.now + p.leaseMs,
      expiresAt: this.now + p.ttlMs,
    });
    return true;
  }
  async complete() {
    return true;
  }
  async renew() {
    return true;
  }
  async release() {}
  async evict() {
    return 0;
  }
}

const HASH_A = Buffer.alloc(32, 1);
const HASH_B = Buffer.alloc(32, 2);

function ledgerOn(sql: MemoryLedgerSql, nonBlockingReads = true) {
  const db = {
    dialect: { idempotency: sql, nonBlockingReads },
    exec: () => undefined,
    withoutTransaction: <T>(fn: () => Promise<T>) => fn(),
  };
  const metrics = { idempotencyStoreLatency: { record: () => undefined } };
  return new IdempotencyLedger(
    db as any,
    metrics as any,
    { lockTimeoutMs: 100 } as any,
    new ReplayCache({ replayCache: false }),
  );
}

const request = (over: Partial<LedgerRequest> = {}): LedgerRequest => ({
  scope: 's',
  key: 'k',
  requestHash: HASH_A,
  mode: 'transactional',
  ttlMs: 60_000,
  leaseMs: 30_000,
  retryAfterSeconds: 1,
  ...over,
});

describe('IdempotencyLedger decisions (in-memory ledger)', () => {
  let sql: MemoryLedgerSql;
  let ledger: IdempotencyLedger;
  beforeEach(() => {
    sql = new MemoryLedgerSql();
    ledger = ledgerOn(sql);
  });

  it('reserves a new key', async () => {
    const d = await ledger.reserve(request());
    expect(d).toMatchObject({ kind: 'reserved', takenOver: undefined });
    expect(sql.records.get('s|k')?.state).toBe('started');
  });

  it('leased reservations live one lease longer than ttl (so a completion within the lease keeps the expiry)', async () => {
    await ledger.reserve(request({ mode: 'leased', ttlMs: 1000, leaseMs: 500 }));
    expect(sql.records.get('s|k')!.expiresAt - sql.now).toBe(1500);
  });

  it('replays a completed record of the same request', async () => {
    sql.put('s', 'k', { status: 201, body: Buffer.from('x') });
    const d = await ledger.reserve(request());
    expect(d).toEqual({
      kind: 'replay',
      answer: { status: 201, headers: '[]', body: Buffer.from('x') },
    });
  });

  it('a completed record of another request is a mismatch', async () => {
    sql.put('s', 'k', { requestHash: HASH_B });
    expect(await ledger.reserve(request())).toEqual({ kind: 'mismatch' });
  });

  it('a started record is in progress whatever the payload, Retry-After the lease left capped by retryAfterSeconds', async () => {
    sql.put('s', 'k', {
      state: 'started',
      requestHash: HASH_B,
      lockedUntil: sql.now + 30_000,
      leaseToken: 't',
    });
    expect(await ledger.reserve(request({ retryAfterSeconds: 1 }))).toEqual({
      kind: 'in-progress',
      retryAfterSeconds: 1,
    });
    sql.records.get('s|k')!.lockedUntil = sql.now + 2_500;
    expect(await ledger.reserve(request({ retryAfterSeconds: 10 }))).toEqual({
      kind: 'in-progress',
      retryAfterSeconds: 3,
    });
  });

  it('an uncommitted reservation (locked) is in progress with retryAfterSeconds', async () => {
    sql.locked.add('s|k');
    expect(await ledger.reserve(request({ retryAfterSeconds: 2 }))).toEqual({
      kind: 'in-progress',
      retryAfterSeconds: 2,
    });
  });

  it('takes an expired record over, whatever its request was', async () => {
    sql.put('s', 'k', { requestHash: HASH_B, expiresAt: sql.now - 1 });
    const d = await ledger.reserve(request());
    expect(d).toMatchObject({ kind: 'reserved', takenOver: 'expired' });
    expect(sql.records.get('s|k')!.requestHash).toEqual(HASH_A);
  });

  it("takes a lapsed lease over with the dead holder's token", async () => {
    sql.put('s', 'k', { state: 'started', leaseToken: 'dead', lockedUntil: sql.now - 1 });
    const d = await ledger.reserve(request());
    expect(d).toMatchObject({ kind: 'reserved', takenOver: 'lease-lapsed' });
    expect(sql.records.get('s|k')!.leaseToken).not.toBe('dead');
  });

  it('reads the record when the reservation statement did not return it', async () => {
    sql.rowInReserve = false;
    sql.put('s', 'k', { requestHash: HASH_B });
    expect(await ledger.reserve(request())).toEqual({ kind: 'mismatch' });
    expect(sql.calls).toEqual(['reserve', 'find']);
  });

  it('tries again when the record vanished between its statements (cleanup), then reserves', async () => {
    sql.rowInReserve = false;
    sql.put('s', 'k', {});
    sql.beforeFind = () => sql.records.delete('s|k');
    const d = await ledger.reserve(request());
    expect(d.kind).toBe('reserved');
    expect(sql.calls).toEqual(['reserve', 'find', 'reserve']);
  });

  it('gives up as in progress when the record keeps changing under it', async () => {
    // Every reservation meets a record that is gone by the time it is read.
    sql.reserve = async () => {
      sql.calls.push('reserve');
      return { outcome: 'exists' };
    };
    sql.find = async () => {
      sql.calls.push('find');
      return undefined;
    };
    expect(await ledger.reserve(request())).toEqual({ kind: 'in-progress', retryAfterSeconds: 1 });
    expect(sql.calls).toEqual(['reserve', 'find', 'reserve', 'find', 'reserve', 'find']);
  });

  it('a take-over lost to another request reads again and answers what now holds the key', async () => {
    sql.put('s', 'k', { expiresAt: sql.now - 1 });
    const takeOver = sql.takeOver.bind(sql);
    sql.takeOver = async (...args) => {
      // Another request took it over first and completed with another payload.
      sql.records.get('s|k')!.expiresAt = sql.now + 60_000;
      sql.records.get('s|k')!.requestHash = HASH_B;
      return takeOver(...args);
    };
    expect(await ledger.reserve(request())).toEqual({ kind: 'mismatch' });
  });

  describe('read-first look-up', () => {
    it('answers only from a live completed record', async () => {
      expect(await ledger.lookUpCompleted(request())).toBeUndefined();
      sql.put('s', 'k', { state: 'started', lockedUntil: sql.now + 1000 });
      expect(await ledger.lookUpCompleted(request())).toBeUndefined();
      sql.put('s', 'k', { expiresAt: sql.now - 1 });
      expect(await ledger.lookUpCompleted(request())).toBeUndefined();
      sql.put('s', 'k', {});
      expect((await ledger.lookUpCompleted(request()))?.kind).toBe('replay');
      sql.put('s', 'k', { requestHash: HASH_B });
      expect(await ledger.lookUpCompleted(request())).toEqual({ kind: 'mismatch' });
    });

    it('a failed read is no answer (the reservation decides)', async () => {
      sql.find = async () => {
        throw new Error('connection lost');
      };
      expect(await ledger.lookUpCompleted(request())).toBeUndefined();
    });

    it('reads first only for a subject answered mostly by records, and only where reads never wait', async () => {
      const subject = {};
      expect(ledger.shouldReadFirst(subject)).toBe(false);
      for (let i = 0; i < 64; i++) ledger.observe(subject, true);
      expect(ledger.shouldReadFirst(subject)).toBe(true);
      for (let i = 0; i < 64; i++) ledger.observe(subject, false);
      expect(ledger.shouldReadFirst(subject)).toBe(false);
      const blocking = ledgerOn(sql, false);
      for (let i = 0; i < 64; i++) blocking.observe(subject, true);
      expect(blocking.shouldReadFirst(subject)).toBe(false);
    });
  });
});
