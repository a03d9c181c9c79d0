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
  Req,
  Type,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.options';
import { LibraryLogger } from '../observability/library-logger';
import { problem, PROBLEM_TYPES, ProblemDetailsFilter } from '../problem-details';
import type { OutboxDeadLetterFilter, OutboxEntry } from '../outbox/outbox-admin.service';
import type { InboxStatus, OutboxStatus } from '../persistence/dialects';
import { keyHashOf } from '../gate/idempotency-context';
import {
  AdminSameOriginGuard,
  defaultAdminPrincipal,
  type AdminPrincipalResolver,
} from './admin-request.guard';
import {
  type AdminOverview,
  IdempotencyAdminService,
  IdempotencyKeyView,
  IdempotencyScopeRef,
  INBOX_STATUSES,
  type InboxEntry,
  OUTBOX_STATUSES,
  scopeOf,
} from './admin.service';
import {
  ADMIN_BAD_BATCH,
  ADMIN_BAD_CONSUMER,
  ADMIN_BAD_CURSOR,
  ADMIN_BAD_ID,
  ADMIN_BAD_INBOX_ID,
  ADMIN_INBOX_NOT_FOUND,
  ADMIN_NOT_RESETTABLE,
  ADMIN_BAD_INBOX_STATUS,
  ADMIN_BAD_LIMIT,
  ADMIN_BAD_ORDER,
  ADMIN_BAD_STATUS,
  ADMIN_FILTER_BAD_ALL,
  ADMIN_FILTER_BAD_RANGE,
  ADMIN_FILTER_BAD_TEXT,
  ADMIN_FILTER_BAD_TIME,
  ADMIN_FILTER_EMPTY,
  ADMIN_FILTER_UNKNOWN,
  ADMIN_KEY_NOT_FOUND,
  ADMIN_MESSAGE_NOT_FOUND,
  ADMIN_MISSING_PARAM,
  ADMIN_NOT_PURGEABLE,
  ADMIN_NOT_REQUEUEABLE,
  REENCRYPT_NO_RING,
} from './maintenance.messages';
import type { ReencryptReport } from '../encryption/reencrypt-stored-answers';

/** Stable `type` URIs of the admin API's problem+json answers (from the one list, `PROBLEM_TYPES`). */
export const ADMIN_PROBLEM_TYPES = {
  badRequest: PROBLEM_TYPES.adminInvalidRequest,
  notFound: PROBLEM_TYPES.adminNotFound,
  conflict: PROBLEM_TYPES.adminConflict,
  crossSite: PROBLEM_TYPES.adminCrossSite,
} as const;

const badRequest = (detail: string) =>
  problem(400, PROBLEM_TYPES.adminInvalidRequest, 'Invalid admin request', detail);
const notFound = (detail: string) => problem(404, PROBLEM_TYPES.adminNotFound, 'Not found', detail);
const conflict = (detail: string) =>
  problem(409, PROBLEM_TYPES.adminConflict, 'Not allowed in this state', detail);

/** A message id: 1 to 255 characters, no control characters; else 400 with `invalid(id)`. */
function idParam(id: string, invalid: (id: string) => string): string {
  const valid =
    id.length >= 1 &&
    id.length <= 255 &&
    [...id].every((c) => c.charCodeAt(0) > 0x1f && c.charCodeAt(0) !== 0x7f);
  if (!valid) throw badRequest(invalid(id));
  return id;
}

/** An outbox message id. */
const messageId = (id: string) => idParam(id, ADMIN_BAD_ID);

/** An inbox message id. */
const inboxMessageId = (id: string) => idParam(id, ADMIN_BAD_INBOX_ID);

function statusParam(value: string | undefined): OutboxStatus | undefined {
  if (value === undefined || value === '') return undefined;
  if (!(OUTBOX_STATUSES as readonly string[]).includes(value)) {
    throw badRequest(ADMIN_BAD_STATUS(value, OUTBOX_STATUSES));
  }
  return value as OutboxStatus;
}

function inboxStatusParam(value: string | undefined): InboxStatus | undefined {
  if (value === undefined || value === '') return undefined;
  if (!(INBOX_STATUSES as readonly string[]).includes(value)) {
    throw badRequest(ADMIN_BAD_INBOX_STATUS(value, INBOX_STATUSES));
  }
  return value as InboxStatus;
}

function consumerParam(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value.length > 200) throw badRequest(ADMIN_BAD_CONSUMER);
  return value;
}

function limitParam(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw badRequest(ADMIN_BAD_LIMIT(value, 1000));
  return n;
}

function wholeParam(value: string | undefined, name: string, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw badRequest(ADMIN_BAD_BATCH(name, value, max));
  return n;
}

function single(value: unknown, name: string): string | undefined {
  if (Array.isArray(value)) {
    throw badRequest(`The query parameter "${name}" was given more than once.`);
  }
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

/** The query parameters of a dead-letter filter. */
const DEAD_FILTER_PARAMS = [
  'type',
  'partitionKey',
  'failedAfter',
  'failedBefore',
  'error',
  'all',
] as const;

/** A date (`2026-01-31`, UTC midnight) or a date-time with a zone (`Z` or `±hh:mm`). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

function timeParam(value: string | undefined, name: string): Date | undefined {
  if (value === undefined || value === '') return undefined;
  const d = new Date(value);
  if (!ISO_TIME.test(value) || isNaN(d.getTime())) {
    throw badRequest(ADMIN_FILTER_BAD_TIME(name, value));
  }
  return d;
}

function textParam(value: string | undefined, name: string, max: number): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value.length > max) throw badRequest(ADMIN_FILTER_BAD_TEXT(name, max));
  return value;
}

/**
 * The dead-letter filter of `q`: unknown parameters refused (a misspelt criterion must not widen
 * the filter to every dead message), and no criterion at all refused unless `all=true`.
 */
function deadFilterParam(q: Record<string, unknown>): OutboxDeadLetterFilter {
  for (const name of Object.keys(q)) {
    if (!(DEAD_FILTER_PARAMS as readonly string[]).includes(name)) {
      throw badRequest(ADMIN_FILTER_UNKNOWN(name, DEAD_FILTER_PARAMS));
    }
  }
  const all = single(q.all, 'all');
  if (all !== undefined && all !== 'true') throw badRequest(ADMIN_FILTER_BAD_ALL(all));
  const filter: OutboxDeadLetterFilter = {
    type: textParam(single(q.type, 'type'), 'type', 255),
    partitionKey: textParam(single(q.partitionKey, 'partitionKey'), 'partitionKey', 255),
    failedAfter: timeParam(single(q.failedAfter, 'failedAfter'), 'failedAfter'),
    failedBefore: timeParam(single(q.failedBefore, 'failedBefore'), 'failedBefore'),
    errorContains: textParam(single(q.error, 'error'), 'error', 500),
  };
  if (filter.failedAfter && filter.failedBefore && !(filter.failedAfter < filter.failedBefore)) {
    throw badRequest(ADMIN_FILTER_BAD_RANGE);
  }
  const given = Object.values(filter).some((v) => v !== undefined);
  if (!given && all !== 'true') throw badRequest(ADMIN_FILTER_EMPTY);
  return { ...filter, all: all === 'true' };
}

/** The filter as the audit line and the answer show it (times as ISO text). */
function filterView(f: OutboxDeadLetterFilter): Record<string, string | boolean> {
  const view: Record<string, string | boolean> = {};
  if (f.type !== undefined) view.type = f.type;
  if (f.partitionKey !== undefined) view.partitionKey = f.partitionKey;
  if (f.failedAfter) view.failedAfter = f.failedAfter.toISOString();
  if (f.failedBefore) view.failedBefore = f.failedBefore.toISOString();
  if (f.errorContains !== undefined) view.error = f.errorContains;
  if (f.all) view.all = true;
  return view;
}

/** Options of the admin API's controller (`IdempotencyAdminModule.register()`): route prefix, guards, trusted origins, the operator's principal. */
export interface AdminControllerOptions {
  /** Route prefix. Default `admin`. */
  path?: string;
  /** Guards protecting every admin route (authentication, roles). */
  guards?: Array<Type<CanActivate> | CanActivate>;
  /**
   * Origins (`https://ops.example.com`) besides the app's own whose browser pages may call the
   * admin actions (POST, DELETE). Default none: a browser request from another site is refused
   * with 403; requests without `Origin` / `Sec-Fetch-Site` (curl, scripts) are not affected.
   */
  trustedOrigins?: string[];
  /**
   * The operator's principal for the log line of each action. Default: `request.user` as the
   * guard left it (a string, or its `id`, `sub`, `username`, `name` or `email`).
   */
  principal?: AdminPrincipalResolver;
}

/**
 * Builds the admin controller for a path and guards:
 * - `GET    <path>/overview` outbox counts, oldest pending age, sent per minute; inbox per consumer
 * - `GET    <path>/inbox?consumer=&status=&limit=` inbox records, newest first
 * - `POST   <path>/inbox/:consumer/:messageId/reset` failed or retrying record deleted: the next
 *   delivery runs the handler again (then requeue the outbox message)
 * - `POST   <path>/inbox/reset-failed?consumer=` every failed record (of one consumer) reset
 * - `GET    <path>/outbox?status=&partitionKey=&afterSeq=&limit=&order=` messages in sequence order
 *   (`order=newest`: newest first)
 * - `GET    <path>/outbox/:id` one message
 * - `POST   <path>/outbox/:id/requeue` dead or sent → pending (attempts reset)
 * - `POST   <path>/outbox/requeue-dead` every dead message → pending
 * - `DELETE <path>/outbox/dead` purge every dead message
 * - `GET    <path>/outbox/dead/count?type=&partitionKey=&failedAfter=&failedBefore=&error=&all=`
 *   how many dead messages a filter hits (at least one criterion, or `all=true`)
 * - `POST   <path>/outbox/dead/requeue?<filter>` the dead messages it hits → pending (in batches)
 * - `POST   <path>/outbox/dead/purge?<filter>` the dead messages it hits deleted (in batches)
 * - `DELETE <path>/outbox/:id` purge one dead message
 * - `GET    <path>/idempotency?scope=&key=` (or `method=&route=&tenant=&principal=&key=`) inspect a key
 * - `DELETE <path>/idempotency?scope=&key=` evict a key
 * - `POST   <path>/idempotency/reencrypt?batchSize=&maxBatches=&after=` rewrite stored answers
 *   under the key ring's first key (resumable: `after` = the report's `cursor`)
 * Errors are problem+json. The routes change production data: protect them with `guards`.
 * Actions (POST, DELETE) sent by a browser from another site are refused (403), and each action
 * is logged (`admin.*` events, context `IdempotencyAdmin`) with the operator's principal.
 */
export function createAdminController(options: AdminControllerOptions = {}): Type<unknown> {
  const guards = options.guards ?? [];
  const sameOrigin = new AdminSameOriginGuard(options.trustedOrigins ?? []);
  const principalOf = options.principal ?? defaultAdminPrincipal;

  @Controller(options.path ?? 'admin')
  @UseGuards(...guards)
  @UseFilters(new ProblemDetailsFilter())
  class IdempotencyAdminController {
    private readonly logger: LibraryLogger;

    constructor(
      @Inject(IdempotencyAdminService) private readonly admin: IdempotencyAdminService,
      @Inject(IDEMPOTENCY_OPTIONS) options: ResolvedIdempotencyOptions,
    ) {
      this.logger = new LibraryLogger(options.logger, 'IdempotencyAdmin');
      this.encrypted = options.encryption !== undefined;
    }

    private readonly encrypted: boolean;

    /** One log line per action, with who did it (null when the guards say nothing). */
    private audit(event: string, req: unknown, fields: object): void {
      this.logger.event('log', event, { ...fields, principal: principalOf(req) ?? null });
    }

    @Get('overview')
    overview(): Promise<AdminOverview> {
      return this.admin.overview();
    }

    @Get('inbox')
    listInbox(@Query() q: Record<string, unknown>): Promise<InboxEntry[]> {
      return this.admin.listInbox({
        consumer: consumerParam(single(q.consumer, 'consumer')),
        status: inboxStatusParam(single(q.status, 'status')),
        limit: limitParam(single(q.limit, 'limit')),
      });
    }

    // ---- Inbox reset (poison → fix → replay) ----

    @Post('inbox/reset-failed')
    @UseGuards(sameOrigin)
    @HttpCode(200)
    async resetFailedInbox(
      @Query() q: Record<string, unknown>,
      @Req() req: unknown,
    ): Promise<{ reset: number }> {
      const consumer = consumerParam(single(q.consumer, 'consumer'));
      const reset = await this.admin.resetFailedInbox(consumer);
      this.audit('admin.inbox.failed-reset', req, { consumer: consumer ?? null, count: reset });
      return { reset };
    }

    @Post('inbox/:consumer/:messageId/reset')
    @UseGuards(sameOrigin)
    @HttpCode(200)
    async resetInbox(
      @Param('consumer') consumer: string,
      @Param('messageId') id: string,
      @Req() req: unknown,
    ): Promise<{ reset: true; record: InboxEntry }> {
      const c = consumerParam(consumer);
      if (!c) throw badRequest(ADMIN_BAD_CONSUMER);
      const r = await this.admin.resetInboxRecord(c, inboxMessageId(id));
      if (r.outcome === 'not-found') throw notFound(ADMIN_INBOX_NOT_FOUND(c, id));
      if (r.outcome === 'not-resettable') throw conflict(ADMIN_NOT_RESETTABLE(c, id));
      this.audit('admin.inbox.reset', req, {
        consumer: c,
        messageId: id,
        status: r.record.status,
        attempts: r.record.attempts,
      });
      return { reset: true, record: r.record };
    }

    @Get('outbox')
    listOutbox(@Query() q: Record<string, unknown>): Promise<OutboxEntry[]> {
      const afterSeq = single(q.afterSeq, 'afterSeq');
      if (afterSeq !== undefined && !/^\d{1,19}$/.test(afterSeq)) {
        throw badRequest('afterSeq must be a sequence number.');
      }
      const order = single(q.order, 'order');
      if (order !== undefined && order !== 'oldest' && order !== 'newest') {
        throw badRequest(ADMIN_BAD_ORDER(order));
      }
      return this.admin.listOutbox({
        status: statusParam(single(q.status, 'status')),
        partitionKey: single(q.partitionKey, 'partitionKey'),
        afterSeq,
        newestFirst: order === 'newest',
        limit: limitParam(single(q.limit, 'limit')),
      });
    }

    @Post('outbox/requeue-dead')
    @UseGuards(sameOrigin)
    @HttpCode(200)
    async requeueDead(@Req() req: unknown): Promise<{ requeued: number }> {
      const requeued = await this.admin.requeueAllDead();
      this.audit('admin.outbox.dead-requeued', req, { count: requeued });
      return { requeued };
    }

    @Delete('outbox/dead')
    @UseGuards(sameOrigin)
    async purgeDead(@Req() req: unknown): Promise<{ purged: number }> {
      const purged = await this.admin.purgeAllDead();
      this.audit('admin.outbox.dead-purged', req, { count: purged });
      return { purged };
    }

    // ---- Dead letters by filter (declared before the `outbox/:id` routes) ----

    @Get('outbox/dead/count')
    async countDead(
      @Query() q: Record<string, unknown>,
    ): Promise<{ count: number; filter: Record<string, string | boolean> }> {
      const filter = deadFilterParam(q);
      return { count: await this.admin.countDeadOutbox(filter), filter: filterView(filter) };
    }

    @Post('outbox/dead/requeue')
    @UseGuards(sameOrigin)
    @HttpCode(200)
    async requeueDeadWhere(
      @Query() q: Record<string, unknown>,
      @Req() req: unknown,
    ): Promise<{ requeued: number; filter: Record<string, string | boolean> }> {
      const filter = deadFilterParam(q);
      const requeued = await this.admin.requeueDeadOutbox(filter);
      this.audit('admin.outbox.dead-requeued-by-filter', req, {
        filter: filterView(filter),
        count: requeued,
      });
      return { requeued, filter: filterView(filter) };
    }

    @Post('outbox/dead/purge')
    @UseGuards(sameOrigin)
    @HttpCode(200)
    async purgeDeadWhere(
      @Query() q: Record<string, unknown>,
      @Req() req: unknown,
    ): Promise<{ purged: number; filter: Record<string, string | boolean> }> {
      const filter = deadFilterParam(q);
      const purged = await this.admin.purgeDeadOutbox(filter);
      this.audit('admin.outbox.dead-purged-by-filter', req, {
        filter: filterView(filter),
        count: purged,
      });
      return { purged, filter: filterView(filter) };
    }

    @Get('outbox/:id')
    async getOutbox(@Param('id') id: string): Promise<OutboxEntry> {
      const m = await this.admin.getOutboxMessage(messageId(id));
      if (!m) throw notFound(ADMIN_MESSAGE_NOT_FOUND(id));
      return m;
    }

    @Post('outbox/:id/requeue')
    @UseGuards(sameOrigin)
    @HttpCode(200)
    async requeue(@Param('id') id: string, @Req() req: unknown): Promise<OutboxEntry> {
      const r = await this.admin.requeueOutboxMessage(messageId(id));
      if (r.outcome === 'not-found') throw notFound(ADMIN_MESSAGE_NOT_FOUND(id));
      if (r.outcome === 'not-requeueable') throw conflict(ADMIN_NOT_REQUEUEABLE(id, r.status));
      this.audit('admin.outbox.requeued', req, { messageId: id });
      return r.message;
    }

    @Delete('outbox/:id')
    @UseGuards(sameOrigin)
    @HttpCode(204)
    async purge(@Param('id') id: string, @Req() req: unknown): Promise<void> {
      const r = await this.admin.purgeDeadMessage(messageId(id));
      if (r.outcome === 'not-found') throw notFound(ADMIN_MESSAGE_NOT_FOUND(id));
      if (r.outcome === 'not-purgeable') throw conflict(ADMIN_NOT_PURGEABLE(id, r.status));
      this.audit('admin.outbox.purged', req, { messageId: id });
    }

    /**
     * The re-encryption job, bounded per request (`maxBatches`, default 20): repeat with
     * `after=<cursor>` until `done`. 409 when no key ring is configured.
     */
    @Post('idempotency/reencrypt')
    @UseGuards(sameOrigin)
    @HttpCode(200)
    async reencrypt(
      @Query() q: Record<string, unknown>,
      @Req() req: unknown,
    ): Promise<ReencryptReport> {
      const after = single(q.after, 'after');
      if (after !== undefined && !/^\d{1,19}$/.test(after)) {
        throw badRequest(ADMIN_BAD_CURSOR(after));
      }
      const batchSize = wholeParam(single(q.batchSize, 'batchSize'), 'batchSize', 5000);
      const maxBatches = wholeParam(single(q.maxBatches, 'maxBatches'), 'maxBatches', 1000) ?? 20;
      if (!this.encrypted) throw conflict(REENCRYPT_NO_RING);
      const report = await this.admin.reencryptStoredAnswers({ after, batchSize, maxBatches });
      this.audit('admin.idempotency.reencrypted', req, {
        rewritten: report.rewritten,
        unreadable: report.unreadable,
        missingKeyIds: report.missingKeyIds,
        cursor: report.cursor ?? null,
        done: report.done,
      });
      return report;
    }

    @Get('idempotency')
    async inspectKey(@Query() q: Record<string, unknown>): Promise<IdempotencyKeyView> {
      const view = await this.admin.inspectIdempotencyKey(scopeParam(q), keyParam(q));
      if (!view) throw notFound(ADMIN_KEY_NOT_FOUND);
      return view;
    }

    @Delete('idempotency')
    @UseGuards(sameOrigin)
    @HttpCode(204)
    async evictKey(@Query() q: Record<string, unknown>, @Req() req: unknown): Promise<void> {
      const scope = scopeParam(q);
      const key = keyParam(q);
      const evicted = await this.admin.evictIdempotencyKey(scope, key);
      if (!evicted) throw notFound(ADMIN_KEY_NOT_FOUND);
      const s = scopeOf(scope);
      this.audit('admin.idempotency.evicted', req, { scope: s, keyHash: keyHashOf(s, key) });
    }
  }
  return IdempotencyAdminController;
}
