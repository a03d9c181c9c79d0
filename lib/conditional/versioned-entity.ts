import type { DataSource, EntityMetadata, EntityTarget, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { dialectNameOf } from '../persistence/dialects';
import type { VersionedTableSql, VersionKind, VersionValue } from '../persistence/dialects';
import { NO_VERSION_COLUMN, ROWVERSION_NOT_MSSQL } from './conditional.messages';

/** The primary key of one row: the value itself for a one-column key, or an object of its key properties. */
export type EntityId = string | number | ObjectLiteral;

/**
 * What conditional writes need to know about an entity, read once from its TypeORM metadata:
 * table, primary key and version column, and whether the version is a counter
 * (`@VersionColumn()`, any database) or a SQL Server rowversion.
 * @internal
 */
export class VersionedEntity {
  readonly kind: VersionKind;
  readonly version: ColumnMetadata;
  readonly keys: ColumnMetadata[];
  readonly sql: VersionedTableSql;

  private constructor(readonly metadata: EntityMetadata) {
    const type = String(metadata.connection.options.type);
    const mssql = dialectNameOf(type) === 'mssql';
    // `timestamp` is rowversion's old name on SQL Server only (elsewhere it is a date-time type).
    const isRowVersion = (c: ColumnMetadata) =>
      c.type === 'rowversion' || (mssql && c.type === 'timestamp');
    const version = metadata.versionColumn ?? metadata.columns.find(isRowVersion);
    if (!version) throw new Error(NO_VERSION_COLUMN(metadata.name));
    this.kind = isRowVersion(version) ? 'rowversion' : 'counter';
    if (this.kind === 'rowversion' && !mssql) {
      throw new Error(ROWVERSION_NOT_MSSQL(metadata.name, type));
    }
    this.version = version;
    this.keys = metadata.primaryColumns;
    this.sql = {
      schema: metadata.schema,
      table: metadata.tableName,
      keyColumns: this.keys.map((c) => c.databaseName),
      versionColumn: version.databaseName,
      versionKind: this.kind,
    };
  }

  private static readonly cache = new WeakMap<EntityMetadata, VersionedEntity>();

  static of(dataSource: DataSource, target: EntityTarget<ObjectLiteral>): VersionedEntity {
    const metadata = dataSource.getMetadata(target);
    let described = this.cache.get(metadata);
    if (!described) {
      described = new VersionedEntity(metadata);
      this.cache.set(metadata, described);
    }
    return described;
  }

  get name(): string {
    return this.metadata.name;
  }

  /** The version stored in a loaded entity. */
  versionOf(entity: ObjectLiteral): VersionValue {
    const raw = this.version.getEntityValue(entity);
    if (this.kind === 'rowversion') {
      return Buffer.isBuffer(raw) ? raw : Buffer.from(raw as Uint8Array);
    }
    return Number(raw);
  }

  /**
   * Columns a write may set from `values`: plain columns (embedded ones included) that are
   * present in `values`, never the primary key or the version, and only insertable / updatable ones.
   */
  writableColumns(
    values: ObjectLiteral,
    mode: 'insert' | 'update',
  ): Array<[ColumnMetadata, unknown]> {
    const out: Array<[ColumnMetadata, unknown]> = [];
    for (const column of this.metadata.columns) {
      if (
        column.isPrimary ||
        column === this.version ||
        column.isVirtual ||
        column.isVirtualProperty
      ) {
        continue;
      }
      if (
        column.isDiscriminator ||
        column.isTreeLevel ||
        column.isDeleteDate ||
        column.isGenerated
      ) {
        continue;
      }
      if (mode === 'insert' ? !column.isInsert : !column.isUpdate) continue;
      let value = column.getEntityValue(values);
      if (value === undefined && column.isUpdateDate) value = new Date();
      if (value === undefined && column.isCreateDate && mode === 'insert') value = new Date();
      if (value === undefined) continue;
      out.push([column, value]);
    }
    return out;
  }
}
