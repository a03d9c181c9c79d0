import { writeKind } from '../../lib/persistence/stray-write.detector';
import { isMisconfiguration } from '../../lib/persistence/database-misconfigured';

describe('writeKind (which statements count as writes)', () => {
  it.each([
    ['INSERT INTO payments (id) VALUES ($1)', 'INSERT'],
    ['  update payments SET status = 1', 'UPDATE'],
    ['DELETE FROM payments', 'DELETE'],
    ['MERGE INTO t USING s ON (t.id = s.id) WHEN MATCHED THEN UPDATE SET x = 1', 'MERGE'],
    ['REPLACE INTO t (id) VALUES (1)', 'REPLACE'],
    ['UPSERT INTO t (id) VALUES (1)', 'UPSERT'],
    ['/* app */ INSERT INTO t VALUES (1)', 'INSERT'],
    ['-- note\nDELETE FROM t', 'DELETE'],
    ['WITH gone AS (DELETE FROM t RETURNING id) SELECT id FROM gone', 'DELETE'],
    [
      'DECLARE @OutputTable TABLE ("id" int); INSERT INTO t OUTPUT INSERTED.id INTO @OutputTable VALUES (1)',
      'INSERT',
    ],
  ])('%s → %s', (sql, kind) => expect(writeKind(sql)).toBe(kind));

  it.each([
    'SELECT * FROM payments',
    'SELECT * FROM payments FOR UPDATE',
    "WITH x AS (SELECT 'insert into' AS s) SELECT * FROM x",
    'WITH x AS (SELECT id FROM t FOR UPDATE) SELECT * FROM x',
    "WITH x AS (SELECT REPLACE(name, 'a', 'b') AS n FROM t) SELECT n FROM x",
    'START TRANSACTION',
    'BEGIN',
    'SAVEPOINT typeorm_1',
    'CREATE TABLE t (id int)',
  ])('%s → not a write', (sql) => expect(writeKind(sql)).toBeUndefined());
});

describe('isMisconfiguration (driver errors of a missing table or column)', () => {
  it.each([
    ['PostgreSQL undefined table', { code: '42P01' }],
    ['PostgreSQL undefined column', { code: '42703' }],
    ['MySQL no such table', { code: 'ER_NO_SUCH_TABLE', errno: 1146, sqlState: '42S02' }],
    ['MySQL bad field', { code: 'ER_BAD_FIELD_ERROR', errno: 1054, sqlState: '42S22' }],
    ['SQL Server invalid object name', { number: 208 }],
    ['SQL Server invalid column name', { number: 207 }],
    [
      'SQLite no such table',
      { code: 'SQLITE_ERROR', message: 'no such table: idempotency_records' },
    ],
    ['wrapped by TypeORM', { driverError: { code: '42P01' } }],
  ])('%s', (_, error) => expect(isMisconfiguration(error)).toBe(true));

  it.each([
    ['a deadlock', { code: '40P01' }],
    ['a unique violation', { code: '23505' }],
    ['SQLite busy', { code: 'SQLITE_BUSY', message: 'database is locked' }],
    ['SQLite syntax error', { code: 'SQLITE_ERROR', message: 'near "x": syntax error' }],
    ['SQL Server deadlock', { number: 1205 }],
  ])('not %s', (_, error) => expect(isMisconfiguration(error)).toBe(false));
});
