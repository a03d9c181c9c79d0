/**
 * `Retry-After` (RFC 9110 §10.2.3): either a number of seconds or an HTTP-date.
 * Returns the wait in milliseconds (0 for a date in the past), or `undefined` when the header is
 * absent or unreadable (the caller then falls back to its own back-off).
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()) {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (/^\d+$/.test(v)) {
    const seconds = Number(v);
    return Number.isSafeInteger(seconds) ? seconds * 1000 : undefined;
  }
  // HTTP-date (IMF-fixdate, and the obsolete RFC 850 / asctime forms Date.parse also reads).
  // A bare number with a sign or a fraction is not a valid Retry-After: ignore it.
  if (/^[+-]?[\d.]+$/.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
