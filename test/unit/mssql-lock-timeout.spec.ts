import { QueryFailedError } from 'typeorm';
import { isMssqlLockTimeout } from '../../lib/persistence/dialects/mssql/idempotency.sql';

/** An error as the mssql driver raises it, wrapped by TypeORM like a failed query. */
const driverError = (number: number, message: string) => {
  const e: any = new Error(message);
  e.number = number;
  e.originalError = { info: { number, message } };
  return new QueryFailedError('EXEC …', [], e);
};

describe('isMssqlLockTimeout', () => {
  it('recognizes SQL Server 1222 (Lock request time out period exceeded)', () => {
    expect(isMssqlLockTimeout(driverError(1222, 'Lock request time out period exceeded.'))).toBe(
      true,
    );
  });

  it("recognizes Babelfish's client-side lock time-out (33557097)", () => {
    expect(
      isMssqlLockTimeout(driverError(33557097, 'canceling statement due to lock timeout')),
    ).toBe(true);
    const bare: any = new Error('canceling statement due to lock timeout');
    expect(isMssqlLockTimeout(bare)).toBe(true);
  });

  it("leaves Babelfish's other unmapped errors (the same 33557097) alone", () => {
    expect(
      isMssqlLockTimeout(driverError(33557097, 'relation "idempotency_records" does not exist')),
    ).toBe(false);
  });

  it('leaves other errors alone', () => {
    expect(isMssqlLockTimeout(driverError(2627, 'Violation of UNIQUE KEY constraint'))).toBe(false);
    expect(isMssqlLockTimeout(driverError(1205, 'Transaction was deadlocked'))).toBe(false);
    expect(isMssqlLockTimeout(new Error('Connection lost'))).toBe(false);
    expect(isMssqlLockTimeout(undefined)).toBe(false);
  });
});
