/*
 * Where the library's tables live (`tables`, `schema` of the module): types, defaults and checks. Merged with the other features' options in
 * idempotency-options.resolver.ts (the one place where defaults are applied).
 */

/** Names of the library's tables (defaults `idempotency_records`, `outbox_messages`, `inbox_messages`). */
export interface TableNames {
  /** The gate's records. Default `idempotency_records`. */
  idempotency?: string;
  /** The outbox. Default `outbox_messages`. */
  outbox?: string;
  /** The inbox. Default `inbox_messages`. */
  inbox?: string;
}

/** The table defaults. @internal */
export const TABLE_DEFAULTS: Required<TableNames> = {
  idempotency: 'idempotency_records',
  outbox: 'outbox_messages',
  inbox: 'inbox_messages',
};

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Checks of the table names and the schema: plain identifiers only. @internal */
export function validateTableOptions(
  tables: Required<TableNames>,
  schema: string | undefined,
  fail: (msg: string) => void,
): void {
  for (const [k, v] of Object.entries(tables)) {
    if (!IDENTIFIER.test(v)) fail(`table name for ${k} is not a plain identifier: ${v}`);
  }
  if (schema !== undefined && !IDENTIFIER.test(schema)) {
    fail(`schema is not a plain identifier: ${schema}`);
  }
}
