/**
 * Test-only preload (`node -r test/support/crash-on-channel.js`): the crash switch of the fault
 * suite, outside the package. EO_TEST_FAULTS is a comma-separated list of `point` or `point@N`
 * (fire on the N-th pass, default the first); each point is a diagnostics channel of the library
 * (DIAGNOSTICS_CHANNELS) or of the sample app (sample-app/ops/sample.channels.ts). On the N-th
 * message of a listed point the process kills itself with SIGKILL: no cleanup, no shutdown hooks,
 * exactly like a crash. Without EO_TEST_FAULTS it subscribes to nothing.
 */
const dc = require('node:diagnostics_channel');

/** Point names of EO_TEST_FAULTS whose channel is not `nestjs-exactly-once:<point>`. */
const CHANNEL_OF = {
  'relay-after-publish': 'nestjs-exactly-once:outbox.after-publish',
  'payments.in-handler': 'sample-app:payments.in-handler',
  'ledger.in-handler': 'sample-app:ledger.in-handler',
};
const MID_RESPONSE = 'nestjs-exactly-once:gate.mid-response';

const spec = new Map();
for (const item of (process.env.EO_TEST_FAULTS ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean)) {
  const [name, n] = item.split('@');
  spec.set(name, Math.max(1, Number(n ?? 1) || 1));
}

for (const [point, at] of spec) {
  let hits = 0;
  dc.subscribe(CHANNEL_OF[point] ?? `nestjs-exactly-once:${point}`, () => {
    if (++hits !== at) return;
    process.stderr.write(`fault point ${point} reached: SIGKILL\n`);
    process.kill(process.pid, 'SIGKILL');
  });
}

// An armed process sends every captured answer in two writes (the gate does so while the
// mid-response channel is heard), whichever point is armed: the other requests of a burst are
// then also caught half-answered.
if (spec.size && !spec.has('gate.mid-response')) dc.subscribe(MID_RESPONSE, () => undefined);
