// nestjs-exactly-once/testing: the kit for an app's own unit and e2e tests. Test-only: it
// refuses to load with NODE_ENV=production, and nothing of it is reachable from the root entry.
import { refuseProduction } from './production.guard';

refuseProduction();

export { IdempotencyTestingModule } from './idempotency-testing.module';
export type { IdempotencyTestingOptions } from './idempotency-testing.module';
export { IdempotencyTestKit } from './idempotency-test-kit';
export { CapturingPublisher } from './capturing.publisher';
export { TestClock } from './test-clock';
