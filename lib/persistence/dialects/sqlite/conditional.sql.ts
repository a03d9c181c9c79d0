import type { ConditionalSql } from '../contracts/conditional.contract';
import { returningConditionalSql } from '../portable/conditional.sql';
import { SQLITE_STYLE } from './sqlite.helpers';

/**
 * SQLite (3.35+ for RETURNING). One writer at a time, and the library serializes transactions
 * in process, so the single UPDATE … WHERE version IN (…) RETURNING decides alone. Insert-if-absent
 * is `ON CONFLICT (<primary key>) DO NOTHING RETURNING` (no row back: the key exists).
 */
export function sqliteConditionalSql(): ConditionalSql {
  return returningConditionalSql(SQLITE_STYLE, false);
}
