/**
 * Prints the plain closing line CI reads: "N passed, N failed" (and skipped when any), after the
 * run's slowest spec files with their wall time (where CI's minutes go). When
 * EO_SUMMARY_FILE is set (test/run-all.js), the counts are also appended there, so a run made of
 * several Jest invocations can close with one line for all of them.
 */
const { appendFileSync } = require('node:fs');

class SummaryReporter {
  constructor() {
    this.durations = [];
  }

  onTestResult(_test, result) {
    const { start, end } = result.perfStats;
    if (start && end) this.durations.push([result.testFilePath, end - start]);
  }

  onRunComplete(_contexts, results) {
    const slowest = this.durations.sort((a, b) => b[1] - a[1]).slice(0, 8);
    if (slowest.length > 1) {
      const cwd = process.cwd() + '/';
      process.stdout.write(
        `\nslowest spec files: ${slowest
          .map(([f, ms]) => `${f.replace(cwd, '')} ${Math.round(ms / 1000)} s`)
          .join(', ')}\n`,
      );
    }
    const skipped = results.numPendingTests + results.numTodoTests;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const line =
      `${results.numPassedTests} passed, ${failed} failed` +
      (skipped ? `, ${skipped} skipped` : '');
    process.stdout.write(`\n${line}\n`);
    if (process.env.EO_SUMMARY_FILE) {
      appendFileSync(
        process.env.EO_SUMMARY_FILE,
        JSON.stringify({ passed: results.numPassedTests, failed, skipped }) + '\n',
      );
    }
  }
}
module.exports = SummaryReporter;
