import type { Logger as TypeOrmLogger } from 'typeorm';

/**
 * A TypeORM logger that only counts the statements the app sends, by kind (BEGIN, INSERT,
 * SELECT, UPDATE, COMMIT, ...), so the benchmark can report statements per request. Counting
 * is a map increment per statement: the same negligible cost in every scenario.
 */
export class StatementCounter implements TypeOrmLogger {
  private counts = new Map<string, number>();

  logQuery(query: string): void {
    const kind = statementKind(query);
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  logQueryError(error: string | Error, query: string): void {
    console.error(
      `query failed: ${error instanceof Error ? error.message : error}\n  ${query.slice(0, 200)}`,
    );
  }

  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') console.warn(message);
  }

  /** The counts since the last reset, and resets them. */
  take(): Record<string, number> {
    const out = Object.fromEntries(this.counts);
    this.counts = new Map();
    return out;
  }
}

/** BEGIN / COMMIT / ROLLBACK / INSERT / SELECT / UPDATE / DELETE / WITH..INSERT (→ first verb). */
function statementKind(sql: string): string {
  const s = sql.trimStart();
  const word = /^[A-Za-z]+/.exec(s)?.[0]?.toUpperCase() ?? 'OTHER';
  if (word === 'START' || word === 'BEGIN') return 'BEGIN';
  if (word === 'WITH') {
    const verb = /\b(INSERT|UPDATE|DELETE)\b/i.exec(s)?.[0]?.toUpperCase();
    return verb ? `WITH/${verb}` : 'WITH/SELECT';
  }
  return word;
}
