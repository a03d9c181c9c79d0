#!/usr/bin/env node
/**
 * The whole suite (`npm test`): unit, integration and e2e, then the fault suite, as two Jest runs
 * (the fault suite runs two files at a time: jest.faults.config.js). Ends with
 * one "N passed, N failed" line for both, and a non-zero exit when either run failed.
 */
const { spawnSync } = require('node:child_process');
const { mkdtempSync, readFileSync, existsSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const summary = join(mkdtempSync(join(tmpdir(), 'eo-test-')), 'summary.jsonl');
const jest = require.resolve('jest/bin/jest');
const extra = process.argv.slice(2);
let status = 0;
for (const config of ['jest.config.js', 'jest.faults.config.js']) {
  const started = Date.now();
  const r = spawnSync(process.execPath, [jest, '--config', config, ...extra], {
    stdio: 'inherit',
    env: { ...process.env, EO_SUMMARY_FILE: summary },
  });
  process.stdout.write(`${config}: exit ${r.status} in ${Math.round((Date.now() - started) / 1000)} s\n`);
  if (r.status !== 0) status = r.status || 1;
}
const totals = { passed: 0, failed: 0, skipped: 0 };
if (existsSync(summary)) {
  for (const line of readFileSync(summary, 'utf8').split('\n').filter(Boolean)) {
    const c = JSON.parse(line);
    totals.passed += c.passed;
    totals.failed += c.failed;
    totals.skipped += c.skipped;
  }
}
if (status !== 0 && totals.failed === 0) totals.failed = 1; // a run that crashed before reporting
process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}\n`);
process.exit(status);
