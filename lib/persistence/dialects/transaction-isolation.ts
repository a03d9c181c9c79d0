import type { DataSource } from 'typeorm';

/** The isolation levels the library asks for by name. */
export type IsolationLevel = 'READ COMMITTED';

/**
 * The isolation level of the library's own short transactions (a relay's claim, a cleanup
 * batch): READ COMMITTED where the driver offers the choice (SQL Server, PostgreSQL, MySQL/
 * MariaDB: no gap locks on InnoDB, READPAST allowed on SQL Server), else the database's own
 * (SQLite, serialized anyway).
 */
export function transactionIsolationOf(dataSource: DataSource): IsolationLevel | undefined {
  const driver = dataSource.driver as unknown as { supportedIsolationLevels?: readonly string[] };
  return driver.supportedIsolationLevels?.includes('READ COMMITTED') ? 'READ COMMITTED' : undefined;
}
