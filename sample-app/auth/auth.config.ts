import { randomBytes } from 'node:crypto';
import { numberFromEnv } from '../config/sample.config';

/** AUTH_TOKEN_TTL_S: lifetime of the access tokens POST /auth/token signs. Default 15 minutes. */
export const authTokenTtlSeconds = (): number => numberFromEnv('AUTH_TOKEN_TTL_S') ?? 900;

/** AUTH_TOKEN_SECRET: the HS256 secret. Unset: a random one per process (tokens of this process only). */
export const authTokenSecret = (): string =>
  process.env.AUTH_TOKEN_SECRET || randomBytes(32).toString('hex');
