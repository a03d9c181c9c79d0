import { EntitySchema } from 'typeorm';
import type { DialectName } from '../dialects';
import { columnTypes } from './column-types';

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

export function idempotencyRecordEntity(
  db: DialectName,
  table: string,
  schema?: string,
): EntitySchema<IdempotencyRecord> {
  const t = columnTypes(db);
  return new EntitySchema<IdempotencyRecord>({
    name: 'IdempotencyRecord',
    tableName: table,
    schema: db === 'sqlite' ? undefined : schema,
    columns: {
      id: t.id(),
      scope: { ...t.string(450) },
      idempotencyKey: { ...t.string(255), name: 'idempotency_key' },
      requestHash: { ...t.binary(32), name: 'request_hash' },
      state: t.ascii(16),
      responseStatus: { ...t.int(true), name: 'response_status' },
      responseHeaders: { ...t.text(), name: 'response_headers' },
      responseBody: { ...t.blob(), name: 'response_body' },
      leaseToken: { ...t.ascii(64, true), name: 'lease_token' },
      lockedUntil: { ...t.time(true), name: 'locked_until' },
      createdAt: { ...t.time(), name: 'created_at' },
      completedAt: { ...t.time(true), name: 'completed_at' },
      expiresAt: { ...t.time(), name: 'expires_at' },
    },
    uniques: [{ name: `ux_${table}_scope_key`, columns: ['scope', 'idempotencyKey'] }],
    indices: [{ name: `ix_${table}_expires_at`, columns: ['expiresAt'] }],
  });
}
