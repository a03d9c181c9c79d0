import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';
import { LibraryLogger } from '../../lib/observability/library-logger';

/**
 * Which lines the library writes through Nest's Logger. Nest's `Logger.isLevelEnabled` answers
 * false for every level while the app has set no log levels (Nest then prints every level): the
 * library must still report failures and conflicts there, without a debug line per request.
 */
describe('LibraryLogger levels', () => {
  const statics = Logger as unknown as { logLevels?: unknown; staticInstanceRef?: unknown };
  let saved: { logLevels?: unknown; staticInstanceRef?: unknown };
  beforeEach(() => {
    saved = { logLevels: statics.logLevels, staticInstanceRef: statics.staticInstanceRef };
    statics.logLevels = undefined;
    statics.staticInstanceRef = new ConsoleLogger();
  });
  afterEach(() => {
    statics.logLevels = saved.logLevels;
    statics.staticInstanceRef = saved.staticInstanceRef;
  });

  it('with no levels set by the app: error, warn and log on, debug and verbose off', () => {
    const l = new LibraryLogger(undefined, 'Idempotency');
    expect(['error', 'warn', 'log', 'debug', 'verbose'].map((x) => l.isEnabled(x as any))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });

  it("follows the app's levels when it set them", () => {
    Logger.overrideLogger(['error', 'debug']);
    const l = new LibraryLogger(undefined, 'Idempotency');
    expect(l.isEnabled('error')).toBe(true);
    expect(l.isEnabled('warn')).toBe(false);
    expect(l.isEnabled('debug')).toBe(true);
  });

  it('writes nothing when the app was created with logger: false, or the option is false', () => {
    Logger.overrideLogger(false);
    expect(new LibraryLogger(undefined, 'Idempotency').isEnabled('error')).toBe(false);
    expect(new LibraryLogger(false, 'Idempotency').isEnabled('error')).toBe(false);
  });

  it("an app's own LoggerService decides for itself, and gets structured events", () => {
    const lines: unknown[][] = [];
    const mine: LoggerService = {
      log: (...a: unknown[]) => lines.push(['log', ...a]),
      warn: (...a: unknown[]) => lines.push(['warn', ...a]),
      error: (...a: unknown[]) => lines.push(['error', ...a]),
    };
    const l = new LibraryLogger(mine, 'Idempotency');
    expect(l.isEnabled('debug')).toBe(true);
    l.event('warn', 'idempotency.lease-takeover', () => ({ keyHash: 'abc' }));
    l.event('debug', 'idempotency.reserved', () => ({ keyHash: 'abc' }));
    expect(lines).toEqual([
      ['warn', { event: 'idempotency.lease-takeover', keyHash: 'abc' }, 'Idempotency'],
    ]);
  });
});

/**
 * What a default app's console shows (issue 18, item 5): one line per event that matters, none
 * for per-request and per-batch events (debug), and every event on one line of text.
 */
describe("LibraryLogger on Nest's default console", () => {
  const statics = Logger as unknown as { logLevels?: unknown; staticInstanceRef?: unknown };
  let saved: { logLevels?: unknown; staticInstanceRef?: unknown };
  let written: string[];
  let spy: jest.SpyInstance;
  const use = (instance: ConsoleLogger) => {
    statics.logLevels = undefined;
    statics.staticInstanceRef = instance;
  };
  beforeEach(() => {
    saved = { logLevels: statics.logLevels, staticInstanceRef: statics.staticInstanceRef };
    written = [];
    spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: any) => {
      written.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    spy.mockRestore();
    statics.logLevels = saved.logLevels;
    statics.staticInstanceRef = saved.staticInstanceRef;
  });

  const emitAll = () => {
    const gate = new LibraryLogger(undefined, 'Idempotency');
    const relay = new LibraryLogger(undefined, 'OutboxRelay');
    // Per request and per batch: debug.
    gate.event('debug', 'idempotency.reserved', () => ({ keyHash: 'abc', mode: 'leased' }));
    gate.event('debug', 'idempotency.replay', () => ({ keyHash: 'abc', status: 201 }));
    relay.event('debug', 'outbox.batch', { owner: 'r1', claimed: 3, sent: 3, failed: 0 });
    // Events that matter.
    relay.event('log', 'outbox.relay.started', { relayId: 'r1', batchSize: 100 });
    gate.event('warn', 'idempotency.lease-takeover', () => ({
      keyHash: 'abc',
      error: 'line one\nline two',
    }));
  };

  it('text console: the two events that matter, each on one line; nothing at debug', () => {
    use(new ConsoleLogger({ colors: false }));
    emitAll();
    const lines = written.join('').split('\n').filter(Boolean);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/\[OutboxRelay\] outbox\.relay\.started relayId=r1 batchSize=100$/);
    expect(lines[1]).toMatch(
      /\[Idempotency\] idempotency\.lease-takeover keyHash=abc error="line one\\nline two"$/,
    );
    for (const line of lines) expect(line).toMatch(/^\[Nest\] \d+ +- /);
  });

  it('JSON console: the same two events, with their fields', () => {
    use(new ConsoleLogger({ json: true }));
    emitAll();
    const lines = written.join('').split('\n').filter(Boolean);
    expect(lines.map((l) => JSON.parse(l).message)).toEqual([
      { event: 'outbox.relay.started', relayId: 'r1', batchSize: 100 },
      { event: 'idempotency.lease-takeover', keyHash: 'abc', error: 'line one\nline two' },
    ]);
  });
});
