/**
 * Prints the plain closing line CI reads: "N passed, N failed" (and skipped when any). When
 * EO_SUMMARY_FILE is set (test/run-all.js), the counts are also appended there, so a run made of
 * several Jest invocations can close with one line for all of them.
 */
const { appendFileSync } = require('node:fs');

class SummaryReporter {
  onRunComplete(_contexts, results) {
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
