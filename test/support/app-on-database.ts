import type { INestApplication } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import {
  createTestDatabase,
  databaseKinds,
  type TestDatabase,
  type TestDatabaseKind,
} from './databases';
import { baseUrl, type Platform } from './sample-app';

/** Both HTTP platforms the apps run on. */
export const PLATFORMS: Platform[] = ['express', 'fastify'];

/** `describe.each` cases: every database of the run on each of `platforms`. */
export function databasePlatformCases(
  platforms: Platform[] = PLATFORMS,
): Array<readonly [TestDatabaseKind['name'], Platform]> {
  return databaseKinds().flatMap((kind) => platforms.map((p) => [kind, p] as const));
}

/** An app listening in this process on a fresh database of its own. */
export interface AppOnDatabase {
  db: TestDatabase;
  app: INestApplication;
  /** The app's base URL on loopback. */
  url: string;
}

/**
 * Creates a fresh database of `kind` and starts an app on it (`start` is given its URL): a
 * spec's `beforeAll`. Should the app fail to start, the database is dropped again.
 */
export async function startAppOnDatabase(
  kind: TestDatabaseKind['name'],
  start: (dbUrl: string) => Promise<INestApplication>,
): Promise<AppOnDatabase> {
  const db = await createTestDatabase(kind);
  let app: INestApplication | undefined;
  try {
    app = await start(db.url);
    return { db, app, url: await baseUrl(app) };
  } catch (e) {
    await app?.close();
    await db.drop();
    throw e;
  }
}

/**
 * Undoes `startAppOnDatabase` (a spec's `afterAll`): destroys the spec's own DataSource on the
 * database, if it opened one, closes the app and drops the database; any of them may be missing.
 */
export async function stopAppOnDatabase(parts: {
  ds?: DataSource;
  app?: INestApplication;
  db?: TestDatabase;
}): Promise<void> {
  await parts.ds?.destroy();
  await parts.app?.close();
  await parts.db?.drop();
}
