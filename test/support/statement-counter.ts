import type { Logger as TypeOrmLogger } from 'typeorm';

/**
 * A TypeORM logger that records every statement an app's DataSource sends (TypeORM calls
 * `logQuery` for each one, whatever the `logging` option), so a test can prove how many
 * round trips a request cost.
 */
export class StatementCounter implements TypeOrmLogger {
  readonly statements: string[] = [];

  logQuery(query: string): void {
    this.statements.push(query);
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}

  /** The statements sent while `fn` ran. */
  async during<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
    const from = this.statements.length;
    const result = await fn();
    return { result, statements: this.statements.slice(from) };
  }
}
