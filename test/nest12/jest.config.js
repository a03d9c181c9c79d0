/** The Nest 12 phase (.ci/nest12.sh): the main Jest config, with Nest 12's ES modules compiled to CommonJS. */
const { join } = require('node:path');
const base = require('../../jest.config.js');

module.exports = {
  ...base,
  rootDir: join(__dirname, '..', '..'),
  transform: { ...base.transform, '^.+\\.m?js$': '<rootDir>/test/nest12/esm-to-cjs.transform.js' },
  transformIgnorePatterns: [],
};
