/**
 * A copy of `o` without its `undefined` properties, so that `{ ...defaults, ...stripUndefined(o) }`
 * keeps a default where the caller wrote `{ x: undefined }`.
 * @internal
 */
export function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}
