export const REFUSED_IN_PRODUCTION =
  'nestjs-exactly-once/testing is a test-only kit (an in-memory SQLite database, a capturing ' +
  'publisher, a movable clock) and refuses to run with NODE_ENV=production. Import it from test ' +
  'files only, and run tests with NODE_ENV=test (Jest sets it) or unset.';

export const SQLITE_DRIVER_MISSING =
  'nestjs-exactly-once/testing runs on an in-memory SQLite database through better-sqlite3: ' +
  'npm install --save-dev better-sqlite3';

export const NOT_INITIALIZED =
  'IdempotencyTestKit: the testing module is not initialized yet; call app.init() (or ' +
  'moduleRef.init()) first.';

export const DRAIN_DID_NOT_SETTLE = (passes: number) =>
  `IdempotencyTestKit.drainOutbox(): the outbox still had due messages after ${passes} passes ` +
  '(does the code under test keep adding messages while the outbox drains?)';
