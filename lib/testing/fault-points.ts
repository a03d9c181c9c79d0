/**
 * Test-only fault points. Inert unless the process was started with `EO_TEST_FAULTS`, a
 * comma-separated list of `name` or `name@N` (fire on the N-th pass, default the first). When a
 * listed point is reached, the process kills itself with SIGKILL: no cleanup, no shutdown hooks,
 * exactly like a crash. The fault suite uses it to crash real processes at the worst moments.
 * @internal
 */
const spec = parse(process.env.EO_TEST_FAULTS);
const hits = new Map<string, number>();

function parse(value: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, n] = item.split('@');
    out.set(name, Math.max(1, Number(n ?? 1) || 1));
  }
  return out;
}

/** True when any fault point is configured (lets callers skip work on the hot path). */
export const faultPointsEnabled = spec.size > 0;

/** Crashes the process here if `name` is configured and this is its N-th pass. */
export function faultPoint(name: string): void {
  if (!faultPointsEnabled) return;
  const at = spec.get(name);
  if (at === undefined) return;
  const n = (hits.get(name) ?? 0) + 1;
  hits.set(name, n);
  if (n === at) {
    process.stderr.write(`fault point ${name} reached: SIGKILL\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
