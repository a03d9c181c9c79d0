/**
 * The fault suite's order: longest file first, so that it never starts last while the other
 * worker sits idle. Jest's own sequencer does that only with the durations of an earlier run on
 * the same machine (its cache); a fresh clone (every CI run) has none, and Jest then goes by file
 * size, which started the crash points (about 190 s) after the storms and the outages: 315 s
 * with two workers on the 2-core VM of 2026-11-29, 271 s in this order. Here a file's duration is
 * the one Jest measured last on this machine when it has one, or else its expected seconds below
 * (`npm test` in CI on that VM, one file at a time; files not listed take a few seconds and keep
 * Jest's file-size order among themselves). A file that failed last time still goes first, as
 * with Jest's. (The main suite keeps Jest's order: its 84 files on three workers ran 205 s in
 * Jest's order and 212 s longest first, fresh caches, same VM.)
 */
const Sequencer = require('@jest/test-sequencer').default;
const { relative } = require('node:path');

const EXPECTED_SECONDS = {
  'test/faults/crash-points.spec.ts': 190,
  'test/faults/storms.spec.ts': 116,
  'test/faults/outages.spec.ts': 76,
  'test/faults/hostile-input.spec.ts': 18,
  'test/faults/security.spec.ts': 11,
};

/** Expected milliseconds of a spec file (path relative to the repository) with no measured duration. */
function expectedMs(relativePath) {
  const s = EXPECTED_SECONDS[relativePath.split('\\').join('/')];
  return s === undefined ? undefined : s * 1000;
}

class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    const size = (t) => t.context.hasteFS.getSize(t.path) ?? 0;
    const duration = (t) =>
      t.duration ?? expectedMs(relative(t.context.config.rootDir, t.path)) ?? 0;
    // As Jest's: the measured duration, which Jest's scheduler also reads.
    for (const t of tests) t.duration = this.time(t);
    const keyed = tests.map((t) => ({
      t,
      failed: this.hasFailed(t),
      ms: duration(t),
      size: size(t),
    }));
    keyed.sort((a, b) => {
      if (a.failed !== b.failed) return a.failed ? -1 : 1;
      if (a.ms !== b.ms) return b.ms - a.ms;
      return b.size - a.size;
    });
    return keyed.map((k) => k.t);
  }
}

module.exports = SlowFirstSequencer;
module.exports.expectedMs = expectedMs;
