/** Messages of the maintenance features (cleanup, health, admin), in one place. */

export const CLEANUP_STATEMENT_FAILED = (table: string, error: string) =>
  `Retention cleanup of the ${table} table failed (the next run tries again): ${error}`;

export const CLEANUP_RUN_FAILED = (error: string) =>
  `Retention cleanup run failed (the next run tries again): ${error}`;

export const HEALTH_RELAY_STALE = (ageMs: number, maxMs: number) =>
  `the outbox relay in this process has not polled for ${ageMs} ms (threshold ${maxMs} ms)`;

export const HEALTH_RELAY_STOPPED = 'the outbox relay in this process is stopped';

export const HEALTH_BACKLOG_OLD = (ageMs: number, maxMs: number) =>
  `the oldest pending outbox message is ${ageMs} ms old (threshold ${maxMs} ms)`;

export const HEALTH_DEAD_LETTERS = (count: number, max: number) =>
  `${count} outbox messages are dead letters (threshold ${max})`;

export const HEALTH_QUERY_FAILED = (error: string) => `the outbox could not be inspected: ${error}`;

export const ADMIN_BAD_STATUS = (value: string, allowed: readonly string[]) =>
  `status must be one of ${allowed.join(', ')}; got "${value}".`;

export const ADMIN_BAD_LIMIT = (value: string, max: number) =>
  `limit must be a whole number from 1 to ${max}; got "${value}".`;

export const ADMIN_BAD_ID = (value: string) => `"${value}" is not a valid outbox message id.`;

export const ADMIN_MESSAGE_NOT_FOUND = (id: string) => `No outbox message with id "${id}".`;

export const ADMIN_NOT_REQUEUEABLE = (id: string, status: string) =>
  `Outbox message "${id}" is ${status}; only dead or sent messages can be re-queued.`;

export const ADMIN_NOT_PURGEABLE = (id: string, status: string) =>
  `Outbox message "${id}" is ${status}; only dead messages can be purged.`;

export const ADMIN_MISSING_PARAM = (name: string) => `The query parameter "${name}" is required.`;

export const ADMIN_KEY_NOT_FOUND = 'No idempotency record for this scope and key.';

export const ADMIN_BAD_INBOX_STATUS = (value: string, allowed: readonly string[]) =>
  `status must be one of ${allowed.join(', ')}; got "${value}".`;

export const ADMIN_BAD_CONSUMER = 'consumer must be 1 to 200 characters.';

export const ADMIN_CROSS_SITE = (origin: string) =>
  `Refused: this request changes data and came from another site (${origin}). Admin actions are accepted from the same origin only (see the trustedOrigins option).`;

export const ADMIN_CONSOLE_UNGUARDED =
  'The admin console (console: true) is mounted without a guard while NODE_ENV=production. ' +
  'Protect it as you protect the admin API: IdempotencyAdminModule.register({ guards: [YourAdminGuard], console: true }). ' +
  'If a proxy in front of the app already authenticates these routes, say so explicitly: console: { allowUnguarded: true }.';

export const ADMIN_BAD_ORDER = (value: string) => `order must be oldest or newest; got "${value}".`;

export const ADMIN_BAD_INBOX_ID = (value: string) =>
  `"${value}" is not a valid inbox message id (1 to 255 characters, no control characters).`;

export const ADMIN_INBOX_NOT_FOUND = (consumer: string, messageId: string) =>
  `No inbox record of message "${messageId}" for consumer "${consumer}".`;

export const ADMIN_NOT_RESETTABLE = (consumer: string, messageId: string) =>
  `The inbox record of message "${messageId}" for consumer "${consumer}" is processed; only failed or ` +
  `retrying records can be reset (resetting a processed one would run its handler a second time).`;
export const REENCRYPT_NO_RING =
  'Re-encryption needs a key ring: set encryption: { keys: [{ id, key }, …] } in IdempotencyModule (the first key seals).';

export const ADMIN_BAD_CURSOR = (value: string) =>
  `after must be a record id (digits) from an earlier report's cursor; got "${value}".`;

export const ADMIN_BAD_BATCH = (name: string, value: string, max: number) =>
  `${name} must be a whole number from 1 to ${max}; got "${value}".`;

export const ADMIN_FILTER_EMPTY =
  'A filtered requeue or purge needs at least one criterion (type, partitionKey, failedAfter, failedBefore, error), or all=true to act on every dead message.';

export const ADMIN_FILTER_UNKNOWN = (name: string, allowed: readonly string[]) =>
  `Unknown filter parameter "${name}"; the filter takes ${allowed.join(', ')}.`;

export const ADMIN_FILTER_BAD_TEXT = (name: string, max: number) =>
  `${name} must be 1 to ${max} characters.`;

export const ADMIN_FILTER_BAD_TIME = (name: string, value: string) =>
  `${name} must be an ISO 8601 date (2026-01-31) or date-time with a zone (2026-01-31T12:00:00Z); got "${value}".`;

export const ADMIN_FILTER_BAD_RANGE = 'failedAfter must be before failedBefore.';

export const ADMIN_FILTER_BAD_ALL = (value: string) =>
  `all must be true when given; got "${value}".`;
