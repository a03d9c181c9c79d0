import { Logger, type LoggerService } from '@nestjs/common';

/** Whether Nest's static Logger writes anywhere (`logger: false` removes its instance). */
const nestLogs = (): boolean =>
  (Logger as unknown as { staticInstanceRef?: unknown }).staticInstanceRef !== undefined;

/** Whether the app gave Nest log levels (`logger: [...]`, `app.useLogger([...])`). */
const appSetLogLevels = (): boolean =>
  Array.isArray((Logger as unknown as { logLevels?: unknown }).logLevels);

/** The levels the library logs at. */
export type LibraryLogLevel = 'log' | 'warn' | 'error' | 'debug' | 'verbose';

/**
 * The library's one logger. It takes the module's `logger` option: the app's `LoggerService`
 * (nestjs-pino, winston…), `false` to silence the library, or by default Nest's `Logger` with the
 * feature's context (`Idempotency`, `OutboxRelay`, `Inbox`, …).
 *
 * Events are logged as structured objects through the `LoggerService`
 * (`{ event: 'idempotency.replay', keyHash, mode }`, the context last), so that a JSON logger
 * emits real fields and Nest's `ConsoleLogger` still prints them readably. Fields given as a
 * function are built only when the level is on (with Nest's own `Logger`:
 * `Logger.isLevelEnabled`): the gate's events sit on the request path.
 * @internal
 */
export class LibraryLogger implements LoggerService {
  private readonly target: LoggerService | undefined;

  constructor(
    option: LoggerService | false | undefined,
    readonly context: string,
  ) {
    this.target = option === false ? undefined : (option ?? new Logger(context));
  }

  /** False when the app silenced the library (`logger: false`). */
  get enabled(): boolean {
    return this.target !== undefined;
  }

  /**
   * Whether a line at `level` is wanted. With Nest's own Logger: per `Logger.isLevelEnabled` when
   * the app set log levels; when it set none (Nest then prints every level, but
   * `Logger.isLevelEnabled` answers false for all), `error`, `warn` and `log` are on and the
   * per-request `debug`/`verbose` events are off, so a default app sees failures and conflicts
   * without a line per request.
   */
  isEnabled(level: LibraryLogLevel): boolean {
    if (!this.target) return false;
    if (!(this.target instanceof Logger)) return true;
    if (!nestLogs()) return false; // the app was created with `logger: false`
    if (appSetLogLevels()) return Logger.isLevelEnabled(level);
    return level === 'error' || level === 'warn' || level === 'log';
  }

  /**
   * One structured event: `{ event, ...fields }`. On hot paths pass `fields` as a function: it is
   * called (and the event written) only when {@link isEnabled} says the level is on.
   */
  event(level: LibraryLogLevel, event: string, fields: object | (() => object) = {}): void {
    if (typeof fields !== 'function') this.write(level, { event, ...fields });
    else if (this.isEnabled(level)) this.write(level, { event, ...fields() });
  }

  log(message: unknown): void {
    this.write('log', message);
  }

  warn(message: unknown): void {
    this.write('warn', message);
  }

  /** An error, with the stack of what caused it when there is one. */
  error(message: unknown, stack?: string): void {
    this.write('error', message, stack);
  }

  debug(message: unknown): void {
    this.write('debug', message);
  }

  verbose(message: unknown): void {
    this.write('verbose', message);
  }

  private write(level: LibraryLogLevel, message: unknown, stack?: string): void {
    const target = this.target;
    if (!target) return;
    // A Nest `Logger` adds its own context; any other LoggerService is given ours, last.
    const context = target instanceof Logger ? [] : [this.context];
    const params = stack === undefined ? context : [stack, ...context];
    // A LoggerService without `debug`/`verbose` does not log at that level (as Nest's Logger).
    target[level]?.call(target, message, ...params);
  }
}
