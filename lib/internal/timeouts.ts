/**
 * Two ways to bound a promise in time, named by what happens at the deadline.
 * @internal
 */

/** `p`'s value, or `undefined` when `p` has not settled within `ms` (a rejection still rejects). */
export function resolveWithin<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => resolve(undefined), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/** `p`'s value, or a rejection with `timeoutError()` when `p` has not settled within `ms`. */
export async function rejectAfter<T>(
  p: Promise<T>,
  ms: number,
  timeoutError: () => Error,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timeoutError()), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
