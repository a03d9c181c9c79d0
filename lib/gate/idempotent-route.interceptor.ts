import {
  CallHandler,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  Optional,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { IdempotencyMisconfiguredError } from '../persistence/database-misconfigured';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IDEMPOTENT_WITHOUT_MODULE } from './idempotency.messages';

/**
 * What `@Idempotent()` puts on a route: hands each request to the gate of IdempotencyModule.
 * Nest creates it in the controller's module when the app is created; without IdempotencyModule
 * imported, it fails there with a message naming the fix, rather than Nest's generic "can't
 * resolve dependencies of the IdempotencyInterceptor".
 * @internal
 */
@Injectable()
export class IdempotentRouteInterceptor implements NestInterceptor {
  private readonly gate: IdempotencyInterceptor;

  constructor(@Optional() gate?: IdempotencyInterceptor) {
    if (!gate) throw new IdempotencyMisconfiguredError(IDEMPOTENT_WITHOUT_MODULE);
    this.gate = gate;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return this.gate.intercept(context, next);
  }
}
