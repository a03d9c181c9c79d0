import { resolveOptions } from '../../lib/idempotency-options.resolver';
import { FunctionPublisher } from '../../lib';

describe('outbox module options', () => {
  it('has the documented defaults', () => {
    expect(resolveOptions().outbox).toEqual({
      relayEnabled: true,
      pollIntervalMs: 1000,
      batchSize: 100,
      leaseMs: 30_000,
      maxAttempts: 10,
      backoffBaseMs: 1000,
      backoffMaxMs: 300_000,
      ordered: true,
      requireTransaction: true,
      wakeOnCommit: true,
      publishTimeoutMs: 10_000,
      shutdownTimeoutMs: 15_000,
    });
  });

  it('an unset publish timeout follows a short lease (half of it)', () => {
    expect(resolveOptions({ outbox: { leaseMs: 2000 } }).outbox.publishTimeoutMs).toBe(1000);
  });

  it('an unset shutdown timeout is the publish timeout plus 5 s', () => {
    expect(resolveOptions({ outbox: { publishTimeoutMs: 1500 } }).outbox.shutdownTimeoutMs).toBe(
      6500,
    );
    expect(resolveOptions({ outbox: { shutdownTimeoutMs: 800 } }).outbox.shutdownTimeoutMs).toBe(
      800,
    );
  });

  it('keeps the publisher given as an option', () => {
    const publisher = new FunctionPublisher(() => undefined);
    expect(resolveOptions({ outbox: { publisher } }).outbox.publisher).toBe(publisher);
  });

  it.each([
    [
      { publishTimeoutMs: 5000, leaseMs: 5000 },
      /publishTimeoutMs \(5000\) must be below outbox.leaseMs/,
    ],
    [{ batchSize: 0 }, /batchSize must be an integer between 1 and 1000/],
    [{ batchSize: 1001 }, /batchSize/],
    [{ pollIntervalMs: 0 }, /pollIntervalMs/],
    [{ maxAttempts: 0 }, /maxAttempts/],
    [{ shutdownTimeoutMs: 0 }, /shutdownTimeoutMs must be a positive number/],
    [{ backoffBaseMs: 2000, backoffMaxMs: 1000 }, /backoffMaxMs must be >= outbox.backoffBaseMs/],
  ])('rejects %j at startup', (outbox, message) => {
    expect(() => resolveOptions({ outbox })).toThrow(message);
  });
});
