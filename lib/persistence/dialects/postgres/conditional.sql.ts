import type { ConditionalSql } from '../contracts/conditional.contract';
import { returningConditionalSql } from '../portable/conditional.sql';
import { POSTGRES_STYLE } from './postgres.helpers';

/**
 * PostgreSQL. The version check is in the WHERE clause of the one UPDATE or DELETE that writes;
 * a concurrent writer of the same row waits for the first to commit and then re-checks the
 * predicate on the new row version (READ COMMITTED), so it matches nothing. The new counter comes
 * back with RETURNING. Insert-if-absent is `ON CONFLICT (<primary key>) DO NOTHING` (no error, so
 * the caller's transaction stays usable; another unique violation still raises).
 */
export function postgresConditionalSql(): ConditionalSql {
  return returningConditionalSql(POSTGRES_STYLE, true);
}
