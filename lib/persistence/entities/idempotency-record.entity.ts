import { EntitySchema } from 'typeorm';
import type { DialectName } from '../dialects';
import { columnTypes, constraintName, entityTable, identityKeyName } from './column-types';

/** A row of the idempotency ledger. */
export interface IdempotencyRecord {
  id: string;
  scope: string;
  idempotencyKey: string;
  requestHash: Buffer;
  state: 'started' | 'completed';
  responseStatus: number | null;
  responseHeaders: string | null;
  responseBody: Buffer | null;
  leaseToken: string | null;
  lockedUntil: Date | null;
  createdAt: Date;
  completedAt: Date | null;
  expiresAt: Date;
}

/**
 * The idempotency ledger as the CreateIdempotencyRecords migration creates it on `db`
 * (dialects/<db>/schema.sql.ts). Not expressible here, and left alone by TypeORM's schema
 * builder: PostgreSQL's `fillfactor = 80` (a table storage parameter TypeORM neither reads nor
 * writes), SQL Server's CLUSTERED primary key with OPTIMIZE_FOR_SEQUENTIAL_KEY (TypeORM's primary
 * keys are clustered by default; the option is not read back).
 */
export function idempotencyRecordEntity(
  db: DialectName,
  table: string,
  schema?: string,
): EntitySchema<IdempotencyRecord> {
  const t = columnTypes(db);
  const name = (prefix: 'ux' | 'ix' | 'ck', suffix: string) =>
    constraintName(db, prefix)(table, suffix);
  const pk = identityKeyName(db, table);
  const scopeKey = { name: name('ux', 'scope_key'), columns: ['scope', 'idempotencyKey'] };
  return new EntitySchema<IdempotencyRecord>({
    name: 'IdempotencyRecord',
    ...entityTable(db, table, schema),
    columns: {
      id: t.id(pk),
      scope: t.key(450),
      idempotencyKey: { ...t.key(255, { ascii: db === 'mysql' }), name: 'idempotency_key' },
      requestHash: { ...t.binary(32), name: 'request_hash' },
      state: t.ascii(16),
      responseStatus: { ...t.int(true), name: 'response_status' },
      responseHeaders: { ...t.text({ mysql: 'mediumtext' }), name: 'response_headers' },
      responseBody: { ...t.blob(), name: 'response_body' },
      leaseToken: { ...t.ascii(64, true), name: 'lease_token' },
      lockedUntil: { ...t.time(true), name: 'locked_until' },
      createdAt: { ...t.time(), name: 'created_at' },
      completedAt: { ...t.time(true), name: 'completed_at' },
      expiresAt: { ...t.time(), name: 'expires_at' },
    },
    // SQL Server: a UNIQUE index (not a constraint), as the migration creates it.
    uniques: db === 'mssql' ? [] : [scopeKey],
    indices: [
      ...(db === 'mssql' ? [{ ...scopeKey, unique: true }] : []),
      { name: name('ix', 'expires_at'), columns: ['expiresAt'] },
    ],
    // MySQL/MariaDB: TypeORM neither reads nor creates CHECK constraints there (the migration
    // does); declared all the same, it is a no-op for TypeORM.
    checks: [{ name: name('ck', 'state'), expression: `state IN ('started', 'completed')` }],
  });
}
