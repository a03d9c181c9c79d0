import type { ModuleRef } from '@nestjs/core';
import { FunctionPublisher, OutboxRelay } from '../../lib';
import { resolveOptions } from '../../lib/idempotency-options.resolver';
import { MetricsService } from '../../lib/observability/metrics.service';
import type { OutboxStore } from '../../lib/outbox/outbox.store';
import { OutboxWakeSignal } from '../../lib/outbox/outbox-wake.signal';
import { EventRecorder } from '../fixtures/outbox/outbox-fixture';
import { eventually } from '../support/eventually';

/**
 * The relay's loop when the database behind it cannot be reached (pure logic: a store whose
 * claim fails; the real databases' outages are in test/faults/outages.spec.ts): it backs off as a
 * whole with reason `database`, says so once, and says once that it recovered.
 */
describe('OutboxRelay: the database behind it unreachable', () => {
  it('backs off as a whole (reason database), then logs outbox.relay.recovered once with how long', async () => {
    let failing = 4;
    const claims: number[] = [];
    const store = {
      claim: async () => {
        claims.push(Date.now());
        if (failing > 0) {
          failing--;
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
            code: 'ECONNREFUSED',
          });
        }
        return [];
      },
    } as unknown as OutboxStore;
    const logs = new EventRecorder();
    const options = resolveOptions({
      logger: logs,
      outbox: { pollIntervalMs: 20, backoffBaseMs: 10, backoffMaxMs: 40 },
    });
    const relay = new OutboxRelay(
      store,
      options,
      {} as ModuleRef,
      new OutboxWakeSignal(),
      new MetricsService(),
    );
    relay.start(new FunctionPublisher(() => undefined));
    try {
      const outage = await eventually('the relay backs off', () => relay.status.outage);
      expect(outage).toMatchObject({ reason: 'database' });
      expect(outage.lastError).toContain('ECONNREFUSED');
      await eventually('the relay recovered', () => logs.named('outbox.relay.recovered').length);
      expect(relay.status.outage).toBeNull();
      expect(logs.named('outbox.relay.pass-failed')).toHaveLength(4);
      expect(logs.named('outbox.relay.backing-off')).toEqual([
        expect.objectContaining({ reason: 'database' }),
      ]);
      const [recovered] = logs.named('outbox.relay.recovered');
      expect(recovered).toMatchObject({ reason: 'database', passes: 4 });
      expect(recovered.downMs).toBeGreaterThan(0);
      await eventually('it polls on', () => claims.length >= 7);
      expect(logs.named('outbox.relay.recovered')).toHaveLength(1);
    } finally {
      await relay.stop();
    }
  });
});
