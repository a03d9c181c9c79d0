import { MISSING_PACKAGE } from '../outbox.messages';

/**
 * Loads an optional peer package that a publisher needs when it is used (`what`: the publisher,
 * named in the error), or throws an error that says which package to install.
 */
export function requireOptionalPackage<T>(pkg: string, what: string): T {
  try {
    return require(pkg) as T;
  } catch {
    throw new Error(MISSING_PACKAGE(pkg, what));
  }
}
