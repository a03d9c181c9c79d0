import { Injectable } from '@nestjs/common';
import type { EntityTarget, FindOptionsWhere, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { DatabaseService } from '../persistence/database.service';
import { ConditionalStore } from './conditional.store';
import type { ColumnValue, VersionValue } from '../persistence/dialects';
import { currentConditionalState } from './conditional-context';
import { invalidPreconditionHeader, preconditionFailed } from './conditional.errors';
import {
  ID_MISSING,
  NOTHING_TO_UPDATE,
  SCALAR_ID_COMPOSITE,
  UPSERT_RACE,
} from './conditional.messages';
import type { EntityTagCondition } from './entity-tag';
import type { Preconditions } from './preconditions';
import { EntityId, VersionedEntity } from './versioned-entity';
import { entityTagToVersion, versionToETag } from './version-tag';

/** An entity with the strong ETag of its version. */
export interface VersionedResult<T> {
  entity: T;
  /** Quoted strong ETag, ready for the `ETag` header. */
  etag: string;
}

/** The outcome of a successful conditional write. */
export interface ConditionalWriteResult<T> extends VersionedResult<T> {
  /** The row as stored after the write (read back in the write's transaction). */
  entity: T;
  /** The write created the row (the answer should be 201). */
  created: boolean;
}

const FAILED = {
  stale:
    'The resource does not have the version named in If-Match (it changed since that ETag was issued, or does not exist); nothing was written. Read it again for its current ETag.',
  absent: 'If-Match: * requires an existing resource and there is none; nothing was written.',
  exists:
    'If-None-Match: * requires that the resource does not exist, and it does; nothing was written.',
  contradictory: 'If-Match and If-None-Match: * cannot both hold; nothing was written.',
};

/**
 * Writes that check the client's precondition and write in ONE statement
 * (`UPDATE … WHERE id = @id AND version IN (@expected)`; affected rows decide), so two
 * concurrent writers holding the same ETag get exactly one success and one 412. Insert-if-absent
 * is one statement too (the primary key decides). Preconditions default to those of the current
 * `@ConditionalUpdate()` request; each write runs in the ambient transaction (nestjs-cls), or in
 * its own when there is none, and reads the row back in it.
 *
 * The entity needs a version column: `@VersionColumn()` (an integer, any database; incremented
 * here) or, on SQL Server, a `rowversion` (set by the server, returned by `OUTPUT`).
 */
@Injectable()
export class ConditionalWriter {
  constructor(
    private readonly db: DatabaseService,
    private readonly store: ConditionalStore,
  ) {}

  /** Loads a row and records its ETag as the answer's (for `@ConditionalRead()` handlers). */
  async find<T extends ObjectLiteral>(
    target: EntityTarget<T>,
    id: EntityId,
  ): Promise<VersionedResult<T> | null> {
    const e = this.describe(target);
    const entity = await this.db.manager.findOne(target, { where: this.keyWhere(e, id) });
    if (!entity) return null;
    const etag = versionToETag(e.kind, e.versionOf(entity));
    const state = currentConditionalState();
    if (state) state.etag = etag;
    return { entity, etag };
  }

  /** The strong ETag of a loaded entity's version. */
  etagOf<T extends ObjectLiteral>(target: EntityTarget<T>, entity: T): string {
    const e = this.describe(target);
    return versionToETag(e.kind, e.versionOf(entity));
  }

  /**
   * PUT: creates or replaces the row, as the preconditions allow. `If-None-Match: *` inserts only
   * if absent (412 otherwise); `If-Match: "<etag>"` replaces only that version (412 otherwise);
   * `If-Match: *` replaces any existing version (412 when absent); none (endpoint not requiring
   * them) replaces or creates. `values` holds the new representation: every column it gives is
   * written (the key comes from `id`, the version is never taken from it).
   */
  async replace<T extends ObjectLiteral>(
    target: EntityTarget<T>,
    id: EntityId,
    values: Partial<T>,
    preconditions: Preconditions = this.requestPreconditions(),
  ): Promise<ConditionalWriteResult<T>> {
    const e = this.describe(target);
    const pre = this.forWrite(preconditions);
    const key = this.keyValues(e, id);
    return this.inTransaction(async () => {
      const insertValues = (): ColumnValue[] => [
        ...e.keys.map((c, i): ColumnValue => [c.databaseName, this.prepare(c, key[i])]),
        ...this.columnValues(e.writableColumns(values, 'insert')),
      ];
      const set = this.columnValues(e.writableColumns(values, 'update'));
      // A rowversion only moves when a column is written; a counter moves by itself.
      if (set.length === 0 && e.kind === 'rowversion' && pre.ifNoneMatch !== '*') {
        throw new Error(NOTHING_TO_UPDATE(e.name));
      }
      const where = this.preparedKey(e, key);
      let version: VersionValue | undefined;
      let created = false;
      if (pre.ifMatch !== undefined && pre.ifNoneMatch === '*') {
        throw preconditionFailed(FAILED.contradictory);
      }
      if (pre.ifNoneMatch === '*') {
        version = await this.store.insert(e.sql, where, insertValues());
        if (version === undefined) throw preconditionFailed(FAILED.exists);
        created = true;
      } else if (pre.ifMatch !== undefined) {
        version = await this.updateMatching(e, where, set, pre.ifMatch);
      } else {
        for (let attempt = 0; attempt < 3 && version === undefined; attempt++) {
          version = await this.store.update(e.sql, where, set, 'any');
          if (version !== undefined) break;
          version = await this.store.insert(e.sql, where, insertValues());
          created = version !== undefined;
        }
        if (version === undefined) throw new Error(UPSERT_RACE(e.name));
      }
      return this.settle(e, target, id, version, created);
    });
  }

  /**
   * PATCH: changes the given columns of an existing row, as the preconditions allow
   * (`If-Match: "<etag>"` or `*`; 412 otherwise). Without preconditions (endpoint not requiring
   * them) it updates whatever version is current. Returns null when there is no such row and no
   * precondition was given (answer 404).
   */
  async update<T extends ObjectLiteral>(
    target: EntityTarget<T>,
    id: EntityId,
    changes: Partial<T>,
    preconditions: Preconditions = this.requestPreconditions(),
  ): Promise<ConditionalWriteResult<T> | null> {
    const e = this.describe(target);
    const pre = this.forWrite(preconditions);
    const key = this.keyValues(e, id);
    const set = this.columnValues(e.writableColumns(changes, 'update'));
    if (set.length === 0) throw new Error(NOTHING_TO_UPDATE(e.name));
    return this.inTransaction(async () => {
      const where = this.preparedKey(e, key);
      if (pre.ifNoneMatch === '*') return this.failIfExists(e, target, id, pre);
      const version =
        pre.ifMatch !== undefined
          ? await this.updateMatching(e, where, set, pre.ifMatch)
          : await this.store.update(e.sql, where, set, 'any');
      return version === undefined ? null : this.settle(e, target, id, version, false);
    });
  }

  /**
   * DELETE: removes the row as the preconditions allow (`If-Match: "<etag>"` or `*`; 412
   * otherwise). Returns false when there was no such row and no precondition was given (404).
   */
  async delete<T extends ObjectLiteral>(
    target: EntityTarget<T>,
    id: EntityId,
    preconditions: Preconditions = this.requestPreconditions(),
  ): Promise<boolean> {
    const e = this.describe(target);
    const pre = this.forWrite(preconditions);
    const key = this.keyValues(e, id);
    return this.inTransaction(async () => {
      const where = this.preparedKey(e, key);
      if (pre.ifNoneMatch === '*') return (await this.failIfExists(e, target, id, pre)) ?? false;
      let expected: VersionValue[] | 'any' = 'any';
      if (pre.ifMatch !== undefined) expected = this.expectedVersions(e, pre.ifMatch);
      const deleted = await this.store.delete(e.sql, where, expected);
      this.record(undefined, false);
      if (!deleted && pre.ifMatch !== undefined) {
        throw preconditionFailed(pre.ifMatch === '*' ? FAILED.absent : FAILED.stale);
      }
      return deleted;
    });
  }

  /** The current request's preconditions (`{}` outside `@ConditionalUpdate()`). */
  protected requestPreconditions(): Preconditions {
    return currentConditionalState()?.preconditions ?? {};
  }

  /** Runs `fn` in the ambient transaction, or in a new one when there is none. */
  protected inTransaction<R>(fn: () => Promise<R>): Promise<R> {
    return this.db.inTransaction(fn);
  }

  private describe(target: EntityTarget<ObjectLiteral>): VersionedEntity {
    return VersionedEntity.of(this.db.dataSource, target);
  }

  /** Writes take `If-None-Match: *` only; the entity-tag form belongs to GET. */
  private forWrite(p: Preconditions): Preconditions {
    if (Array.isArray(p.ifNoneMatch)) {
      throw invalidPreconditionHeader(
        'If-None-Match',
        'on a write only "*" (create if absent) is supported; entity tags in If-None-Match are for GET',
      );
    }
    return p;
  }

  /** One UPDATE with the version check in its WHERE clause; 412 when it matched no row. */
  private async updateMatching(
    e: VersionedEntity,
    key: unknown[],
    set: ColumnValue[],
    ifMatch: EntityTagCondition,
  ): Promise<VersionValue> {
    const expected = this.expectedVersions(e, ifMatch);
    const version = await this.store.update(e.sql, key, set, expected);
    if (version === undefined) {
      throw preconditionFailed(ifMatch === '*' ? FAILED.absent : FAILED.stale);
    }
    return version;
  }

  /** The versions If-Match names; 412 at once when none can be a version of this entity. */
  private expectedVersions(
    e: VersionedEntity,
    ifMatch: EntityTagCondition,
  ): VersionValue[] | 'any' {
    if (ifMatch === '*') return 'any';
    const versions = ifMatch
      .map((tag) => entityTagToVersion(e.kind, tag))
      .filter((v): v is VersionValue => v !== undefined);
    if (versions.length === 0) throw preconditionFailed(FAILED.stale);
    return versions;
  }

  /** `If-None-Match: *` on a write that needs an existing row: 412 when it exists, else "not found". */
  private async failIfExists(
    e: VersionedEntity,
    target: EntityTarget<ObjectLiteral>,
    id: EntityId,
    pre: Preconditions,
  ): Promise<null> {
    this.record(undefined, false);
    const exists = await this.db.manager.exists(target, { where: this.keyWhere(e, id) });
    if (exists || pre.ifMatch !== undefined) {
      throw preconditionFailed(pre.ifMatch !== undefined ? FAILED.contradictory : FAILED.exists);
    }
    return null;
  }

  /** Reads the row back in the write's transaction and records the ETag for the answer. */
  private async settle<T extends ObjectLiteral>(
    e: VersionedEntity,
    target: EntityTarget<T>,
    id: EntityId,
    version: VersionValue,
    created: boolean,
  ): Promise<ConditionalWriteResult<T>> {
    const entity = await this.db.manager.findOne(target, { where: this.keyWhere(e, id) });
    if (!entity) {
      throw new Error(
        `${e.name}: the row written by a conditional write could not be read back in its transaction.`,
      );
    }
    const etag = versionToETag(e.kind, version);
    this.record(etag, created);
    return { entity, etag, created };
  }

  private record(etag: string | undefined, created: boolean): void {
    const state = currentConditionalState();
    if (!state) return;
    state.consumed = true;
    state.etag = etag;
    state.created = created;
  }

  private keyValues(e: VersionedEntity, id: EntityId): unknown[] {
    const scalar =
      typeof id !== 'object' || id === null || id instanceof Date || Buffer.isBuffer(id);
    if (scalar) {
      if (e.keys.length !== 1) throw new Error(SCALAR_ID_COMPOSITE(e.name));
      return [id];
    }
    return e.keys.map((c) => {
      const value = c.getEntityValue(id as ObjectLiteral);
      if (value === undefined || value === null) {
        throw new Error(ID_MISSING(e.name, c.propertyPath));
      }
      return value;
    });
  }

  private keyWhere<T extends ObjectLiteral>(e: VersionedEntity, id: EntityId): FindOptionsWhere<T> {
    const key = this.keyValues(e, id);
    return Object.assign(
      {},
      ...e.keys.map((c, i) => c.createValueMap(key[i])),
    ) as FindOptionsWhere<T>;
  }

  private preparedKey(e: VersionedEntity, key: unknown[]): unknown[] {
    return e.keys.map((c, i) => this.prepare(c, key[i]));
  }

  private columnValues(columns: Array<[ColumnMetadata, unknown]>): ColumnValue[] {
    return columns.map(([c, v]) => [c.databaseName, this.prepare(c, v)]);
  }

  /** The driver's own conversion (transformers, dates, JSON…); on SQL Server also its typed parameter. */
  private prepare(column: ColumnMetadata, value: unknown): unknown {
    const driver = this.db.dataSource.driver as any;
    const prepared = driver.preparePersistentValue(value, column);
    return typeof driver.parametrizeValue === 'function'
      ? driver.parametrizeValue(column, prepared)
      : prepared;
  }
}
