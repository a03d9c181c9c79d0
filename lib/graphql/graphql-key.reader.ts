import { headerValues, isFastifyReply } from '../internal/http-platform';

/**
 * A resolver's view of the HTTP exchange behind a GraphQL operation, for every driver: Apollo
 * on Express puts the request in the context as `req` (the response is `req.res`), Mercurius puts
 * Fastify's request as `req` (Nest's default) and the reply as `reply`. Undefined parts when the
 * operation did not come over HTTP (a subscription over WebSocket, a direct `execute()`).
 */
export interface GraphqlHttp {
  req: any;
  res: any;
}

export function graphqlHttpOf(context: unknown): GraphqlHttp {
  const ctx = context as Record<string, any> | undefined;
  const req = ctx?.req ?? ctx?.request ?? ctx?.reply?.request;
  const res = ctx?.res ?? ctx?.reply ?? req?.res;
  return { req, res };
}

/** Every value of the HTTP request's `name` header (none without an HTTP request). */
export function graphqlHeaderValues(http: GraphqlHttp, name: string): string[] {
  return http.req && typeof http.req === 'object' && http.req.headers
    ? headerValues(http.req, name)
    : [];
}

/** Sets a header on the HTTP response that carries the operation's result (Express or Fastify). */
export function setGraphqlResponseHeader(http: GraphqlHttp, name: string, value: string): void {
  const res = http.res;
  if (!res || typeof res !== 'object') return;
  if (isFastifyReply(res)) res.header(name, value);
  else if (typeof res.setHeader === 'function' && !res.headersSent) res.setHeader(name, value);
}

/** A GraphQL response path (`info.path`) as text: `createPayment`, `first`, `a.0.b`. */
export function responsePathOf(path: { key: string | number; prev?: unknown } | undefined): string {
  const keys: Array<string | number> = [];
  for (let p: any = path; p; p = p.prev) keys.unshift(p.key);
  return keys.join('.');
}
