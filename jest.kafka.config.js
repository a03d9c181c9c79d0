/**
 * The Kafka suite (.ci/kafka.sh): test/kafka against a running 3-node Kafka cluster
 * (KAFKA_NODES=3 ../shared/kafka/start.sh). Not part of jest.config.js or jest.faults.config.js:
 * it kills and restarts the cluster's brokers, so it runs alone, one file at a time.
 */
module.exports = {
  ...require('./jest.config.js'),
  testMatch: ['<rootDir>/test/kafka/**/*.spec.ts'],
  testTimeout: 300000,
  maxWorkers: 1,
  forceExit: true,
};
