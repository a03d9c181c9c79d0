/** Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function eventually<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs = 20_000,
  everyMs = 25,
): Promise<Exclude<T, undefined | null | false | 0 | ''>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as Exclude<T, undefined | null | false | 0 | ''>;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
