import type { VersionKind, VersionValue } from '../persistence/dialects';
import { type EntityTag, formatEntityTag } from './entity-tag';

/**
 * A version as a strong ETag, derived from the stored value only (so every instance of the app
 * gives the same ETag for the same row version): a counter as its decimal digits (`"7"`), a
 * rowversion as its 16 lowercase hex digits (`"00000000000007d1"`).
 */
export function versionToETag(kind: VersionKind, version: VersionValue): string {
  return formatEntityTag({ weak: false, opaque: versionToOpaque(kind, version) });
}

/** @internal */
export function versionToOpaque(kind: VersionKind, version: VersionValue): string {
  if (kind === 'rowversion') {
    const bytes = Buffer.isBuffer(version) ? version : Buffer.from(String(version), 'hex');
    return bytes.toString('hex').padStart(16, '0');
  }
  return String(typeof version === 'number' ? version : Number(version));
}

/**
 * The version an entity tag names, or undefined when it cannot name one of this kind (a weak
 * tag, or another shape): such a tag never matches, so its If-Match fails with 412.
 * @internal
 */
export function entityTagToVersion(kind: VersionKind, tag: EntityTag): VersionValue | undefined {
  if (tag.weak) return undefined;
  if (kind === 'rowversion') {
    return /^[0-9a-f]{16}$/.test(tag.opaque) ? Buffer.from(tag.opaque, 'hex') : undefined;
  }
  if (!/^(0|[1-9][0-9]{0,14})$/.test(tag.opaque)) return undefined;
  return Number(tag.opaque);
}
