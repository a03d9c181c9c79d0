/**
 * What differs between databases in statements that are otherwise the same text: how an
 * identifier is quoted and how a parameter is written ($1 on PostgreSQL, ? on MySQL and SQLite,
 * @0 on SQL Server). Statements written once take a style.
 */
export interface SqlStyle {
  /** Quotes one identifier (no schema). */
  quote(id: string): string;
  /** The placeholder of the parameter at 0-based position `i`. */
  mark(i: number): string;
}

/** Collects the parameters of one statement and writes their placeholders. */
export class Binder {
  readonly values: unknown[] = [];
  constructor(private readonly style: SqlStyle) {}
  add(value: unknown): string {
    this.values.push(value);
    return this.style.mark(this.values.length - 1);
  }
}

/** Placeholders of `n` parameters starting at position `from`, comma-separated. */
export function marks(style: SqlStyle, from: number, n: number): string {
  return Array.from({ length: n }, (_, i) => style.mark(from + i)).join(', ');
}

/** Splits a list into chunks of at most `size` (parameter limits: 2100 on SQL Server). */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Runs one statement per chunk of `items` (at most `size`) and adds up the counts they return. */
export async function sumPerChunk<T>(
  items: readonly T[],
  size: number,
  run: (part: T[]) => Promise<number>,
): Promise<number> {
  let n = 0;
  for (const part of chunks(items, size)) n += await run(part);
  return n;
}
