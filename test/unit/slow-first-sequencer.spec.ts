import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The fault suite's test sequencer (jest.faults.config.js), a plain CommonJS module.
const SlowFirstSequencer = require('../support/slow-first.sequencer.js');

const rootDir = join(__dirname, '..', '..');

/** Jest's test objects as the sequencer sees them: a path, and a context with a config and file sizes. */
function testsOf(files: Record<string, number>, cacheDirectory: string) {
  const context = {
    config: { rootDir, cache: true, cacheDirectory, id: 'slow-first-spec', haste: {} },
    hasteFS: { getSize: (path: string) => files[path.slice(rootDir.length + 1)] },
  };
  return Object.keys(files).map((f) => ({ path: join(rootDir, f), context }));
}

const order = (tests: Array<{ path: string }>) =>
  tests.map((t) => t.path.slice(rootDir.length + 1));

describe('SlowFirstSequencer (the fault suite order)', () => {
  let cacheDirectory: string;
  beforeEach(() => {
    cacheDirectory = mkdtempSync(join(tmpdir(), 'eo-sequencer-'));
  });
  afterEach(() => rmSync(cacheDirectory, { recursive: true, force: true }));

  // File sizes in bytes: the largest here is the shortest file to run.
  const files = {
    'test/faults/security.spec.ts': 5_000,
    'test/faults/new-fault.spec.ts': 9_000,
    'test/faults/storms.spec.ts': 12_000,
    'test/faults/crash-points.spec.ts': 11_000,
    'test/faults/small-fault.spec.ts': 1_000,
    'test/faults/outages.spec.ts': 20_000,
  };

  it('in a fresh clone (no measured durations) starts the longest expected file first, then goes by file size', () => {
    const sequencer = new SlowFirstSequencer();
    expect(order(sequencer.sort(testsOf(files, cacheDirectory)))).toEqual([
      'test/faults/crash-points.spec.ts',
      'test/faults/storms.spec.ts',
      'test/faults/outages.spec.ts',
      'test/faults/security.spec.ts',
      'test/faults/new-fault.spec.ts',
      'test/faults/small-fault.spec.ts',
    ]);
  });

  it("prefers this machine's measured durations, and starts a file that failed last time first", () => {
    const tests = testsOf(files, cacheDirectory);
    const result = (file: string, runtime: number, failing = 0) => ({
      testFilePath: join(rootDir, file),
      numFailingTests: failing,
      skipped: false,
      perfStats: { runtime },
    });
    new SlowFirstSequencer().cacheResults(tests, {
      testResults: [
        result('test/faults/new-fault.spec.ts', 600_000),
        result('test/faults/security.spec.ts', 1_000, 1),
      ],
    });
    // A new sequencer reads what the last run wrote, as the next Jest run does.
    expect(order(new SlowFirstSequencer().sort(testsOf(files, cacheDirectory)))).toEqual([
      'test/faults/security.spec.ts',
      'test/faults/new-fault.spec.ts',
      'test/faults/crash-points.spec.ts',
      'test/faults/storms.spec.ts',
      'test/faults/outages.spec.ts',
      'test/faults/small-fault.spec.ts',
    ]);
  });
});
