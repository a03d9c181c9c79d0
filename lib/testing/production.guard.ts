import { REFUSED_IN_PRODUCTION } from './testing.messages';

/** Throws when NODE_ENV=production: the kit is for tests only. */
export function refuseProduction(): void {
  if (process.env.NODE_ENV === 'production') throw new Error(REFUSED_IN_PRODUCTION);
}
