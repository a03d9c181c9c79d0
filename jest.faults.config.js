/** The fault suite (`npm run test:faults`): real processes killed, storms, outages, hostile input. */
module.exports = {
  ...require('./jest.config.js'),
  testMatch: ['<rootDir>/test/faults/**/*.spec.ts'],
  testTimeout: 300000,
  maxWorkers: 1,
};
