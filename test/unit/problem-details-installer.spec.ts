import type { ArgumentsHost, LoggerService } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import { ProblemDetailsFilter } from '../../lib';
import { resolveOptions } from '../../lib/idempotency-options.resolver';
import {
  InstalledProblemDetailsFilter,
  ProblemDetailsInstaller,
} from '../../lib/problem-details/problem-details.installer';

/**
 * The module's problem+json filter of last resort, piece by piece (over real HTTP, Express and
 * Fastify: test/integration/problem-details-default.spec.ts).
 */
const host = (type: string) => ({ getType: () => type }) as unknown as ArgumentsHost;

function installer(
  options: Parameters<typeof resolveOptions>[0],
  config = new ApplicationConfig(),
) {
  const warnings: string[] = [];
  const logger: LoggerService = {
    log: () => undefined,
    error: () => undefined,
    warn: (m: unknown) => void warnings.push(String(m)),
  };
  const i = new ProblemDetailsInstaller(resolveOptions({ logger, ...options }), config);
  return { i, config, warnings };
}

it('is added once, first among the global filters (so Nest tries it last)', () => {
  const config = new ApplicationConfig();
  installer({}, config);
  config.useGlobalFilters(new ProblemDetailsFilter());
  const filters = config.getGlobalFilters();
  expect(filters).toHaveLength(2);
  expect(filters[0]).toBeInstanceOf(InstalledProblemDetailsFilter);
});

it('problemDetailsFilter: false adds none and warns at boot, naming the fix', () => {
  const { i, config, warnings } = installer({ problemDetailsFilter: false });
  expect(config.getGlobalFilters()).toEqual([]);
  i.onApplicationBootstrap();
  expect(warnings).toEqual([
    expect.stringContaining('app.useGlobalFilters(new ProblemDetailsFilter())'),
  ]);
});

it('problemDetailsFilter: false with a subclass of ProblemDetailsFilter registered: no warning', () => {
  class Mine extends ProblemDetailsFilter {}
  const { i, config, warnings } = installer({ problemDetailsFilter: false });
  config.useGlobalFilters(new Mine());
  i.onApplicationBootstrap();
  expect(warnings).toEqual([]);
});

it("an RPC handler's error gets Nest's own RPC answer, not an HTTP write", async () => {
  const answer = new InstalledProblemDetailsFilter().catch(new Error('boom'), host('rpc'));
  expect(isObservable(answer)).toBe(true);
  await expect(lastValueFrom(answer as any)).rejects.toEqual({
    status: 'error',
    message: 'Internal server error',
  });
});
