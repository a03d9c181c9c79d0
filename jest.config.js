/** Whole suite: unit, integration (every reachable database), e2e (real processes). */
module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/{unit,integration,e2e}/**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // Mercurius loads @fastify/static, whose content-disposition 3 is an ES module: Node 20 loads
    // it from CommonJS (require(esm)), Jest 29 cannot, so that one package is compiled to CommonJS.
    '/node_modules/(.+/)?content-disposition/dist/.+\\.js$':
      '<rootDir>/test/nest12/esm-to-cjs.transform.js',
  },
  transformIgnorePatterns: ['/node_modules/(?!(.+/)?content-disposition/dist/)'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testTimeout: 60000,
  // Three workers on a 2-core machine: the suite waits more than it computes (its specs sleep
  // through leases, polls and real processes' boots; about 40 % of both cores idle with two
  // workers). Measured on the 2-core VM of 2026-11-27: 318 s with two workers, 233 s with three.
  maxWorkers: 3,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
