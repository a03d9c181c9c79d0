import type { DataSource } from 'typeorm';
import {
  openSnapshotParts,
  sealSnapshotParts,
  type AnswerSealing,
} from '../gate/response-snapshot';
import { DEFAULT_OPTIONS } from '../idempotency-options.resolver';
import { createDialect } from '../persistence/dialects';
import type {
  AnswersSql,
  StoredAnswerRow,
} from '../persistence/dialects/contracts/answers.contract';
import { executorFor, type SqlExecutor } from '../persistence/sql-executor';
import { envelopeHeader, ENVELOPE_V2, StoredAnswerError } from './answer-envelope';
import { type EncryptionOptions, KeyRing } from './key-ring';

/** Options of the re-encryption job that seals stored answers again under the ring's first key. */
export interface ReencryptOptions {
  /** Records read per statement. Default 500 (at most 5,000). */
  batchSize?: number;
  /** Resume after this record id (the `cursor` of an earlier report). Default: from the first. */
  after?: string;
  /** Stop after this many batches (the report's `cursor` resumes). Default: until done. */
  maxBatches?: number;
  /**
   * Also seal answers stored in plaintext (written before keys were set). Default: the ring's
   * `acceptPlaintext` (the migration switch).
   */
  includePlaintext?: boolean;
}

/** What a run of the re-encryption job did. */
export interface ReencryptReport {
  /** Completed, unexpired records read. */
  scanned: number;
  /** Records rewritten under the ring's first key. */
  rewritten: number;
  /** Records already under the first key (left alone). */
  current: number;
  /** Records written or deleted by the gate between read and rewrite (left as they are now). */
  changedMeanwhile: number;
  /** Plaintext answers left unencrypted (`includePlaintext` off). */
  plaintextLeft: number;
  /** Records that cannot be opened: sealed under a key not in the ring, or altered. */
  unreadable: number;
  /** Ids of the keys missing from the ring that `unreadable` records are sealed under. */
  missingKeyIds: string[];
  /** The id of the last record read: pass it as `after` to resume. */
  cursor?: string;
  /** The whole table was read. */
  done: boolean;
}

/** Where the job reads and writes, and what it tells about each rewritten record. @internal */
export interface ReencryptTarget {
  exec: SqlExecutor;
  sql: AnswersSql;
  /** Told after each rewrite (the app's replay caches forget the record). */
  rewritten?: (row: StoredAnswerRow) => Promise<void> | void;
}

/**
 * A report of nothing done yet, from `after` (the cursor a run starts at).
 * @internal
 */
export function emptyReencryptReport(after: string | undefined): ReencryptReport {
  return {
    scanned: 0,
    rewritten: 0,
    current: 0,
    changedMeanwhile: 0,
    plaintextLeft: 0,
    unreadable: 0,
    missingKeyIds: [],
    cursor: after,
    done: false,
  };
}

/**
 * The re-encryption job's core, for any executor: walks the completed, unexpired records in id
 * order, `batchSize` at a time, and rewrites each answer not sealed under the ring's first key
 * (an older key of the ring, the single `encryptionKey`'s format 1, or plaintext when allowed)
 * with a compare-and-set: a record the gate wrote again meanwhile is left as it is. Records in
 * flight (started) are never read. Expired records are left to cleanup (never replayed).
 * @internal
 */
export async function reencryptWith(
  target: ReencryptTarget,
  ring: KeyRing,
  options: ReencryptOptions = {},
): Promise<ReencryptReport> {
  const batchSize = Math.min(5000, Math.max(1, Math.floor(options.batchSize ?? 500)));
  const includePlaintext = options.includePlaintext ?? ring.acceptPlaintext;
  const missing = new Set<string>();
  const report = emptyReencryptReport(options.after);
  for (let batch = 0; options.maxBatches === undefined || batch < options.maxBatches; batch++) {
    const rows = await target.sql.page(target.exec, report.cursor, batchSize);
    for (const row of rows) {
      report.scanned++;
      const next = resealed(row, ring, includePlaintext, report, missing);
      if (next) {
        if (await target.sql.rewrite(target.exec, row, next.headers, next.body)) {
          report.rewritten++;
          await target.rewritten?.(row);
        } else report.changedMeanwhile++;
      }
    }
    if (rows.length > 0) report.cursor = rows[rows.length - 1].id;
    if (rows.length < batchSize) {
      report.done = true;
      break;
    }
  }
  report.missingKeyIds = [...missing].sort();
  return report;
}

/** The record's answer sealed under the first key, or undefined when it stays as it is (counted). */
function resealed(
  row: StoredAnswerRow,
  ring: KeyRing,
  includePlaintext: boolean,
  report: ReencryptReport,
  missing: Set<string>,
): { headers: string; body: Buffer } | undefined {
  const sealing: AnswerSealing = { ring, scope: row.scope, key: row.key };
  let sealed = false;
  try {
    sealed = !!(row.headers && JSON.parse(row.headers)?.encrypted);
  } catch {
    report.unreadable++;
    return undefined;
  }
  if (sealed) {
    const head = envelopeHeader(row.body);
    if (head?.version === ENVELOPE_V2 && head.keyId === ring.primary.id) {
      report.current++;
      return undefined;
    }
  } else if (!includePlaintext) {
    report.plaintextLeft++;
    return undefined;
  }
  try {
    const parts = sealed
      ? openSnapshotParts(row.status, row.headers, row.body, sealing)
      : { metaJson: row.headers, body: row.body };
    const next = sealSnapshotParts(row.status, parts.metaJson ?? '{"h":[]}', parts.body, sealing);
    return { headers: next.headers, body: next.body! };
  } catch (e) {
    report.unreadable++;
    if (e instanceof StoredAnswerError && e.fault === 'key-unknown' && e.keyId) {
      missing.add(e.keyId);
    }
    return undefined;
  }
}

/**
 * Rewrites the stored answers of the ledger on `dataSource` under the ring's first key, in
 * batches (see {@link ReencryptReport}; resumable with `after`). Safe beside live traffic: a
 * record is rewritten only if it is still the completed answer that was read. For a script or
 * the CLI (`npx nestjs-exactly-once answers reencrypt`); inside a running app, use
 * `IdempotencyAdminService.reencryptStoredAnswers()`, which also clears the replay caches.
 */
export async function reencryptStoredAnswers(
  dataSource: DataSource,
  ring: KeyRing | EncryptionOptions,
  options: ReencryptOptions & {
    /** Database schema of the tables (SQL Server, PostgreSQL), as in the module options. */
    schema?: string;
    /** The ledger table's name, as in the module options. Default `idempotency_records`. */
    table?: string;
  } = {},
): Promise<ReencryptReport> {
  const keys = ring instanceof KeyRing ? ring : KeyRing.from(ring);
  const dialect = await createDialect(dataSource, {
    schema: options.schema,
    tables: {
      ...DEFAULT_OPTIONS.tables,
      idempotency: options.table ?? DEFAULT_OPTIONS.tables.idempotency,
    },
  });
  return reencryptWith(
    { exec: executorFor(dataSource.manager, false), sql: dialect.answers },
    keys,
    options,
  );
}
