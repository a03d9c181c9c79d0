/** The fault suite (`npm run test:faults`): real processes killed, storms, outages, hostile input. */
module.exports = {
  ...require('./jest.config.js'),
  testMatch: ['<rootDir>/test/faults/**/*.spec.ts'],
  testTimeout: 300000,
  maxWorkers: 1,
  // A fault test that fails mid-storm can leave a socket or a killed process' pipe open; the run
  // must still end with its verdict instead of waiting for CI's limit (CI of 2026-11-26 sat after
  // "Jest did not exit" until it was terminated). A passing run closes everything itself.
  forceExit: true,
};
