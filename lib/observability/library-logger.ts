import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';

/** Whether Nest's static Logger writes anywhere (`logger: false` removes its instance). */
const nestLogs = (): boolean =>
  (Logger as unknown as { staticInstanceRef?: unknown }).staticInstanceRef !== undefined;

/** Whether the app gave Nest log levels (`logger: [...]`, `app.useLogger([...])`). */
const appSetLogLevels = (): boolean =>
  Array.isArray((Logger as unknown as { logLevels?: unknown }).logLevels);

/**
 * Whether Nest's Logger prints to the console as text (its default `ConsoleLogger`, not in JSON
 * mode): it prints an object over several lines, so events are given to it as one line of text.
 */
const nestPrintsText = (): boolean => {
  const instance = (Logger as unknown as { staticInstanceRef?: unknown }).staticInstanceRef;
  return (
    instance instanceof ConsoleLogger &&
    !(instance as unknown as { options?: { json?: boolean } }).options?.json
  );
};

/** `outbox.batch owner=r1 sent=3 error="a b"`: an event as one line of text. */
export function eventLine(fields: Record<string, unknown>): string {
  const { event, ...rest } = fields;
  const parts = [String(event)];
  for (const [k, v] of Object.entries(rest)) {
    if (v === undefined) continue;
    const text = typeof v === 'string' && /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
    parts.push(`${k}=${text}`);
  }
  return parts.join(' ');
}

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
   * One structured event: `{ event, ...fields }`, written only when {@link isEnabled} says the
   * level is on (so `debug` events stay out of a default app's console). On hot paths pass
   * `fields` as a function: it is called only then. To Nest's text console it goes as one line
   * (`idempotency.replay keyHash=… mode=transactional status=201`); to a JSON logger or the app's
   * own LoggerService as the object.
   */
  event(level: LibraryLogLevel, event: string, fields: object | (() => object) = {}): void {
    if (!this.isEnabled(level)) return;
    const all = { event, ...(typeof fields === 'function' ? fields() : fields) };
    this.write(level, this.target instanceof Logger && nestPrintsText() ? eventLine(all) : all);
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
