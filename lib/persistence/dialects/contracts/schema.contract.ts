/** DDL of one table (or group of objects): statements to create and to drop it. */
export interface SchemaSql {
  up: string[];
  down: string[];
}

/** What a migration needs to know about the server beyond the dialect. */
export interface ServerFeatures {
  /** SQL Server 2019+: OPTIMIZE_FOR_SEQUENTIAL_KEY on the clustered sequence keys. */
  sequentialKeyOption?: boolean;
}

/** DDL per table. */
export interface SchemaDdl {
  idempotency(features: ServerFeatures): SchemaSql;
  inbox(features: ServerFeatures): SchemaSql;
  outbox(features: ServerFeatures): SchemaSql;
  /**
   * Second outbox migration: an index of dead messages, so that the health check and the backlog
   * gauges count them without reading every sent row the retention keeps.
   */
  outboxDeadIndex(features: ServerFeatures): SchemaSql;
}
