import { Injectable } from '@nestjs/common';
import type {
  ColumnValue,
  ConditionalSql,
  VersionedTableSql,
  VersionValue,
} from '../persistence/dialects';
import { DatabaseService } from '../persistence/database.service';

/**
 * Conditional writes' way to SQL: the dialect's check-and-write statements (each ONE statement)
 * in the ambient transaction.
 * @internal
 */
@Injectable()
export class ConditionalStore {
  constructor(private readonly db: DatabaseService) {}

  /** Updates the row when its version is one of `expected` (or exists, for `'any'`); its new version. */
  update(
    t: VersionedTableSql,
    key: unknown[],
    set: ColumnValue[],
    expected: VersionValue[] | 'any',
  ): Promise<VersionValue | undefined> {
    return this.sql.update(this.db.exec(), t, key, set, expected);
  }

  /** Inserts the row unless its primary key exists; its version, or undefined. */
  insert(
    t: VersionedTableSql,
    key: unknown[],
    values: ColumnValue[],
  ): Promise<VersionValue | undefined> {
    return this.sql.insert(this.db.exec(), t, key, values);
  }

  /** Deletes the row when its version is one of `expected` (or exists, for `'any'`). */
  delete(t: VersionedTableSql, key: unknown[], expected: VersionValue[] | 'any'): Promise<boolean> {
    return this.sql.delete(this.db.exec(), t, key, expected);
  }

  private get sql(): ConditionalSql {
    return this.db.dialect.conditional;
  }
}
