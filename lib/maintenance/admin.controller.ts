import {
  CanActivate,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Type,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { problem, PROBLEM_TYPES, ProblemDetailsFilter } from '../problem-details';
import type { OutboxEntry } from '../outbox/outbox-admin.service';
import type { OutboxStatus } from '../persistence/dialects';
import {
  IdempotencyAdminService,
  IdempotencyKeyView,
  IdempotencyScopeRef,
  OUTBOX_STATUSES,
} from './admin.service';
import {
  ADMIN_BAD_ID,
  ADMIN_BAD_LIMIT,
  ADMIN_BAD_STATUS,
  ADMIN_KEY_NOT_FOUND,
  ADMIN_MESSAGE_NOT_FOUND,
  ADMIN_MISSING_PARAM,
  ADMIN_NOT_PURGEABLE,
  ADMIN_NOT_REQUEUEABLE,
} from './maintenance.messages';

/** Stable `type` URIs of the admin API's problem+json answers (from the one list, `PROBLEM_TYPES`). */
export const ADMIN_PROBLEM_TYPES = {
  badRequest: PROBLEM_TYPES.adminInvalidRequest,
  notFound: PROBLEM_TYPES.adminNotFound,
  conflict: PROBLEM_TYPES.adminConflict,
} as const;

const badRequest = (detail: string) =>
  problem(400, PROBLEM_TYPES.adminInvalidRequest, 'Invalid admin request', detail);
const notFound = (detail: string) => problem(404, PROBLEM_TYPES.adminNotFound, 'Not found', detail);
const conflict = (detail: string) =>
  problem(409, PROBLEM_TYPES.adminConflict, 'Not allowed in this state', detail);

/** A message id: 1 to 255 characters, no control characters. */
function messageId(id: string): string {
  const valid =
    id.length >= 1 &&
    id.length <= 255 &&
    [...id].every((c) => c.charCodeAt(0) > 0x1f && c.charCodeAt(0) !== 0x7f);
  if (!valid) throw badRequest(ADMIN_BAD_ID(id));
  return id;
}

function statusParam(value: string | undefined): OutboxStatus | undefined {
  if (value === undefined || value === '') return undefined;
  if (!(OUTBOX_STATUSES as readonly string[]).includes(value))
    throw badRequest(ADMIN_BAD_STATUS(value, OUTBOX_STATUSES));
  return value as OutboxStatus;
}

function limitParam(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw badRequest(ADMIN_BAD_LIMIT(value, 1000));
  return n;
}

function single(value: unknown, name: string): string | undefined {
  if (Array.isArray(value))
    throw badRequest(`The query parameter "${name}" was given more than once.`);
  return typeof value === 'string' ? value : undefined;
}

/** `scope=` (the stored scope string) or `method=` + `route=` (+ `tenant=`, `principal=`). */
function scopeParam(q: Record<string, unknown>): IdempotencyScopeRef {
  const scope = single(q.scope, 'scope');
  if (scope) return scope;
  const method = single(q.method, 'method');
  const route = single(q.route, 'route');
  if (!method || !route) throw badRequest(ADMIN_MISSING_PARAM('scope (or method and route)'));
  return {
    method,
    route,
    tenant: single(q.tenant, 'tenant'),
    principal: single(q.principal, 'principal'),
  };
}

function keyParam(q: Record<string, unknown>): string {
  const key = single(q.key, 'key');
  if (!key) throw badRequest(ADMIN_MISSING_PARAM('key'));
  return key;
}

export interface AdminControllerOptions {
  /** Route prefix. Default `admin`. */
  path?: string;
  /** Guards protecting every admin route (authentication, roles). */
  guards?: Array<Type<CanActivate> | CanActivate>;
}

/**
 * Builds the admin controller for a path and guards:
 * - `GET    <path>/outbox?status=&partitionKey=&afterSeq=&limit=` messages in sequence order
 * - `GET    <path>/outbox/:id` one message
 * - `POST   <path>/outbox/:id/requeue` dead or sent → pending (attempts reset)
 * - `POST   <path>/outbox/requeue-dead` every dead message → pending
 * - `DELETE <path>/outbox/dead` purge every dead message
 * - `DELETE <path>/outbox/:id` purge one dead message
 * - `GET    <path>/idempotency?scope=&key=` (or `method=&route=&tenant=&principal=&key=`) inspect a key
 * - `DELETE <path>/idempotency?scope=&key=` evict a key
 * Errors are problem+json. The routes change production data: protect them with `guards`.
 */
export function createAdminController(options: AdminControllerOptions = {}): Type<unknown> {
  const guards = options.guards ?? [];

  @Controller(options.path ?? 'admin')
  @UseGuards(...guards)
  @UseFilters(new ProblemDetailsFilter())
  class IdempotencyAdminController {
    constructor(@Inject(IdempotencyAdminService) private readonly admin: IdempotencyAdminService) {}

    @Get('outbox')
    listOutbox(@Query() q: Record<string, unknown>): Promise<OutboxEntry[]> {
      const afterSeq = single(q.afterSeq, 'afterSeq');
      if (afterSeq !== undefined && !/^\d{1,19}$/.test(afterSeq))
        throw badRequest('afterSeq must be a sequence number.');
      return this.admin.listOutbox({
        status: statusParam(single(q.status, 'status')),
        partitionKey: single(q.partitionKey, 'partitionKey'),
        afterSeq,
        limit: limitParam(single(q.limit, 'limit')),
      });
    }

    @Post('outbox/requeue-dead')
    @HttpCode(200)
    async requeueDead(): Promise<{ requeued: number }> {
      return { requeued: await this.admin.requeueAllDead() };
    }

    @Delete('outbox/dead')
    async purgeDead(): Promise<{ purged: number }> {
      return { purged: await this.admin.purgeAllDead() };
    }

    @Get('outbox/:id')
    async getOutbox(@Param('id') id: string): Promise<OutboxEntry> {
      const m = await this.admin.getOutboxMessage(messageId(id));
      if (!m) throw notFound(ADMIN_MESSAGE_NOT_FOUND(id));
      return m;
    }

    @Post('outbox/:id/requeue')
    @HttpCode(200)
    async requeue(@Param('id') id: string): Promise<OutboxEntry> {
      const r = await this.admin.requeueOutboxMessage(messageId(id));
      if (r.outcome === 'not-found') throw notFound(ADMIN_MESSAGE_NOT_FOUND(id));
      if (r.outcome === 'not-requeueable') throw conflict(ADMIN_NOT_REQUEUEABLE(id, r.status));
      return r.message;
    }

    @Delete('outbox/:id')
    @HttpCode(204)
    async purge(@Param('id') id: string): Promise<void> {
      const r = await this.admin.purgeDeadMessage(messageId(id));
      if (r.outcome === 'not-found') throw notFound(ADMIN_MESSAGE_NOT_FOUND(id));
      if (r.outcome === 'not-purgeable') throw conflict(ADMIN_NOT_PURGEABLE(id, r.status));
    }

    @Get('idempotency')
    async inspectKey(@Query() q: Record<string, unknown>): Promise<IdempotencyKeyView> {
      const view = await this.admin.inspectIdempotencyKey(scopeParam(q), keyParam(q));
      if (!view) throw notFound(ADMIN_KEY_NOT_FOUND);
      return view;
    }

    @Delete('idempotency')
    @HttpCode(204)
    async evictKey(@Query() q: Record<string, unknown>): Promise<void> {
      const evicted = await this.admin.evictIdempotencyKey(scopeParam(q), keyParam(q));
      if (!evicted) throw notFound(ADMIN_KEY_NOT_FOUND);
    }
  }
  return IdempotencyAdminController;
}
