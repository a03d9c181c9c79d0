import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** Shares (0..1) of requests that meet each fault; the rest pass untouched. */
export interface FaultShares {
  /** The connection is reset before the request is forwarded: the server never sees it. */
  reset: number;
  /** Forwarded; once the server has answered, the client's connection is cut (a network error). */
  cut: number;
  /** Forwarded; the server's answer is swallowed and the client hears nothing (it times out). */
  drop: number;
  /** Forwarded; the answer is held back for up to `maxDelayMs` before it is delivered. */
  delay: number;
}

export type Fault = keyof FaultShares | 'none';

export interface ProxyStats {
  requests: number;
  faults: Record<Fault, number>;
  /** Answers of the server, as the proxy saw them (including those the client never got). */
  upstream: {
    created: number;
    replayed: number;
    inProgress: number;
    other: number;
    failed: number;
  };
}

export interface FlakyProxy {
  url: string;
  stats: ProxyStats;
  close(): Promise<void>;
}

/**
 * A flaky link on loopback: an HTTP proxy (node:http) to `target` that resets, cuts, drops or
 * delays a share of exchanges. Requests are read whole before they are forwarded, and answers
 * whole before they are (maybe) delivered, so that "the server did the work but the client never
 * heard" is exact. `random` picks the faults (a seeded generator makes a run repeatable).
 */
export async function startFlakyProxy(
  target: string,
  shares: FaultShares,
  maxDelayMs: number,
  random: () => number,
): Promise<FlakyProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const stats: ProxyStats = {
    requests: 0,
    faults: { none: 0, reset: 0, cut: 0, drop: 0, delay: 0 },
    upstream: { created: 0, replayed: 0, inProgress: 0, other: 0, failed: 0 },
  };
  const pick = (): Fault => {
    let r = random();
    for (const f of ['reset', 'cut', 'drop', 'delay'] as const) {
      if (r < shares[f]) return f;
      r -= shares[f];
    }
    return 'none';
  };
  const held = new Set<ServerResponse>();

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    stats.requests++;
    const fault = pick();
    stats.faults[fault]++;
    req.on('error', () => {});
    res.on('error', () => {});
    if (fault === 'reset') {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = { ...req.headers, host: upstream.host };
      const out = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers,
          agent,
        },
        (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (c: Buffer) => body.push(c));
          answer.on('error', () => req.socket.destroy());
          answer.on('end', () => {
            const status = answer.statusCode ?? 0;
            if (status === 409) stats.upstream.inProgress++;
            else if (status === 201 && answer.headers['idempotency-replayed'] === 'true') {
              stats.upstream.replayed++;
            } else if (status === 201) stats.upstream.created++;
            else stats.upstream.other++;
            const deliver = () => {
              if (res.destroyed) return;
              res.writeHead(status, answer.headers);
              res.end(Buffer.concat(body));
            };
            if (fault === 'cut') req.socket.destroy();
            else if (fault === 'drop') {
              // Silence: the client gives up on its own time-out and closes the connection.
              held.add(res);
              res.on('close', () => held.delete(res));
            } else if (fault === 'delay') setTimeout(deliver, Math.floor(random() * maxDelayMs));
            else deliver();
          });
        },
      );
      out.on('error', () => {
        stats.upstream.failed++;
        req.socket.destroy();
      });
      out.end(Buffer.concat(chunks));
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: async () => {
      for (const res of held) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
