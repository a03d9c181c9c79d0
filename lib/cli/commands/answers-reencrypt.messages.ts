/** Texts of `nestjs-exactly-once answers reencrypt`. */

export const REENCRYPT_USAGE = `Usage: nestjs-exactly-once answers reencrypt --url URL [options]

Rewrites the stored answers of the idempotency ledger under the first key of the ring in
IDEMPOTENCY_ENCRYPTION_KEYS ("id:base64key,id:base64key"; the first encrypts, all decrypt),
in batches, beside live traffic (compare-and-set per record). Resumable with --after.

  --url URL            sqlite:<file>, postgres://…, mysql://…, mariadb://…, mssql://…
  --batch-size N       records per statement (default 500)
  --max-batches N      stop after N batches (print the cursor to resume)
  --after ID           resume after this record id (a previous run's cursor)
  --schema NAME        schema of the tables (SQL Server, PostgreSQL)
  --table NAME         ledger table (default idempotency_records)
  --accept-plaintext   also seal answers stored unencrypted (before keys were set)

Exit code: 0 when every record read is under the first key; 1 when some are left (unreadable,
sealed under a key not in the ring, or plaintext without --accept-plaintext); 2 on a usage,
configuration or database error (what was rewritten stays; --after resumes).`;

export const REENCRYPT_NO_KEYS =
  'IDEMPOTENCY_ENCRYPTION_KEYS is not set: give the ring as "newid:<base64 of 32 bytes>,oldid:<base64 of 32 bytes>" (the first encrypts; keep the old keys in it).';

export const REENCRYPT_NO_URL =
  'answers reencrypt: --url is required (e.g. --url postgres://user@host/db).';

export const REENCRYPT_BAD_ARG = (arg: string) =>
  `answers reencrypt: unknown or incomplete argument "${arg}".`;

export const REENCRYPT_BAD_NUMBER = (name: string, value: string) =>
  `answers reencrypt: ${name} must be a whole number above 0; got "${value}".`;

export const REENCRYPT_PROGRESS = (
  rewritten: number,
  scanned: number,
  cursor: string | undefined,
) => `reencrypt: ${rewritten} rewritten of ${scanned} read (cursor ${cursor ?? '-'})`;

export const REENCRYPT_LEFT = (missing: readonly string[], unreadable: number, plaintext: number) =>
  `reencrypt: ${unreadable} record(s) cannot be opened${missing.length ? ` (sealed under ${missing.map((k) => `"${k}"`).join(', ')}, not in IDEMPOTENCY_ENCRYPTION_KEYS: put those keys back in the ring)` : ''}; ${plaintext} plaintext record(s) left (--accept-plaintext seals them).`;

export const REENCRYPT_FAILED = (error: string, cursor: string | undefined) =>
  `answers reencrypt: stopped by an error (${error}). What was rewritten stays rewritten; run again${cursor ? ` with --after ${cursor} to resume` : ''}.`;
