import {
  Inject,
  Injectable,
  type ArgumentsHost,
  type ExceptionFilter,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';
import { ProblemDetailsFilter } from './problem-details.filter';
import { PROBLEM_FILTER_MISSING } from './problem-details.messages';

/**
 * `ProblemDetailsFilter` as the module installs it: HTTP errors become problem+json; an error
 * of another context (a microservice handler of a hybrid app that inherits the app's
 * configuration) gets the framework's own default answer, as it would with no filter here.
 * @internal
 */
export class InstalledProblemDetailsFilter extends ProblemDetailsFilter {
  override catch(exception: unknown, host: ArgumentsHost): unknown {
    if (host.getType() === 'http') return super.catch(exception, host);
    return frameworkDefault(host.getType())?.catch(exception, host) ?? rethrow(exception);
  }
}

/**
 * Installs the app's problem+json filter of last resort (`problemDetailsFilter`, default on).
 *
 * Added to the app's global filters while the module's providers are created, before Nest adds
 * the `APP_FILTER` providers and before `main.ts` calls `app.useGlobalFilters()`: Nest tries
 * global filters from the last added to the first, so this one is tried last, and every filter
 * of the app (method, controller, `APP_FILTER`, `useGlobalFilters`) keeps precedence for the
 * exceptions it catches.
 * @internal
 */
@Injectable()
export class ProblemDetailsInstaller implements OnApplicationBootstrap {
  private readonly logger: LibraryLogger;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly config: ApplicationConfig,
  ) {
    this.logger = new LibraryLogger(options.logger, 'ProblemDetails');
    if (options.problemDetailsFilter) config.addGlobalFilter(new InstalledProblemDetailsFilter());
  }

  onApplicationBootstrap(): void {
    if (this.options.problemDetailsFilter) return;
    // By now main.ts has called app.useGlobalFilters() (app.init() runs after it).
    const seen = this.config.getGlobalFilters().some((f) => f instanceof ProblemDetailsFilter);
    if (!seen) this.logger.warn(PROBLEM_FILTER_MISSING());
  }
}

function rethrow(exception: unknown): never {
  throw exception;
}

/** Nest's default filter of a non-HTTP context, from its optional package, when installed. */
function frameworkDefault(type: string): ExceptionFilter | undefined {
  const [pkg, name] =
    type === 'rpc'
      ? ['@nestjs/microservices', 'BaseRpcExceptionFilter']
      : type === 'ws'
        ? ['@nestjs/websockets', 'BaseWsExceptionFilter']
        : [];
  if (!pkg) return undefined;
  try {
    const Filter = require(pkg)[name!];
    return Filter ? new Filter() : undefined;
  } catch {
    return undefined;
  }
}
