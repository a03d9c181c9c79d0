import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type TextMapGetter,
} from '@opentelemetry/api';
import { Observable } from 'rxjs';

type Headers = Record<string, string | string[] | undefined>;

const getter: TextMapGetter<Headers> = {
  keys: (h) => Object.keys(h),
  get: (h, key) => h[key],
};

/**
 * The sample app's HTTP server span (OpenTelemetry's HTTP semantic conventions): `POST
 * /payments`, SERVER, a child of the client's `traceparent` (W3C trace context, read through the
 * global propagator), ended when the response has been sent, with its status. The library's
 * gate span, the handler and the outbox's stored context are inside it.
 *
 * Why an interceptor rather than @opentelemetry/instrumentation-http: it works the same on
 * Express and Fastify, in the app's own process and in tests that create the app in process,
 * with no `--require` preloading before `http` is loaded. It sees routed requests only (a 404 of
 * the router has no span). An app with instrumentation-http gets its span as the active one
 * instead, and the library's spans nest under it the same way.
 */
@Injectable()
export class HttpTracingInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (ctx.getType() !== 'http') return next.handle();
    const http = ctx.switchToHttp();
    const req = http.getRequest();
    const raw = (http.getResponse().raw ?? http.getResponse()) as {
      statusCode: number;
      once(event: string, fn: () => void): void;
    };
    const method = String(req.method).toUpperCase();
    const route: string = req.route?.path ?? req.routeOptions?.url ?? req.routerPath ?? '';
    const parent = propagation.extract(context.active(), req.headers as Headers, getter);
    const span = trace.getTracer('nestjs-exactly-once-sample').startSpan(
      route ? `${method} ${route}` : method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': method,
          ...(route ? { 'http.route': route } : {}),
          'url.path': String(req.originalUrl ?? req.url ?? '').split('?')[0],
          'url.scheme': req.protocol ?? 'http',
        },
      },
      parent,
    );
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      span.setAttribute('http.response.status_code', raw.statusCode);
      if (raw.statusCode >= 500) {
        span.setAttribute('error.type', String(raw.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    };
    raw.once('finish', end);
    raw.once('close', end);
    const active = trace.setSpan(parent, span);
    // next.handle() binds the rest of the pipeline to the context it is called in.
    return new Observable((subscriber) =>
      context.with(active, () => next.handle().subscribe(subscriber)),
    );
  }
}
