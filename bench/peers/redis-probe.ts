import { connect, type Socket } from 'node:net';

/**
 * A minimal Redis client for the suite's own measurements (CPU and command counters from INFO,
 * the expiry of a peer's keys): one connection, commands sent one at a time in RESP, replies
 * parsed for the types these commands return (simple string, error, integer, bulk string, array).
 */
export class RedisProbe {
  private buffer = Buffer.alloc(0);
  private waiting: Array<(v: unknown) => void> = [];

  private constructor(private readonly socket: Socket) {
    socket.on('data', (d) => {
      this.buffer = Buffer.concat([this.buffer, d]);
      for (;;) {
        const parsed = parse(this.buffer, 0);
        if (!parsed) break;
        this.buffer = this.buffer.subarray(parsed.end);
        this.waiting.shift()?.(parsed.value);
      }
    });
  }

  static open(url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'): Promise<RedisProbe> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const s = connect(Number(u.port || 6379), u.hostname, () => resolve(new RedisProbe(s)));
      s.once('error', reject);
    });
  }

  command(...args: string[]): Promise<unknown> {
    const parts = [`*${args.length}\r\n`];
    for (const a of args) parts.push(`$${Buffer.byteLength(a)}\r\n${a}\r\n`);
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.socket.write(parts.join(''));
    });
  }

  /** One INFO field as a number (e.g. `used_cpu_user` in seconds, `total_commands_processed`). */
  async info(section: string, field: string): Promise<number> {
    const text = String(await this.command('INFO', section));
    const m = new RegExp(`^${field}:([\\d.]+)`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  }

  /** CPU seconds of the Redis server so far (user + system, main thread and children). */
  async cpuMs(): Promise<number> {
    return (
      ((await this.info('cpu', 'used_cpu_user')) + (await this.info('cpu', 'used_cpu_sys'))) * 1000
    );
  }

  /** Commands processed so far (minus the INFO calls of this probe, which the caller subtracts). */
  commands(): Promise<number> {
    return this.info('stats', 'total_commands_processed');
  }

  /** Keys whose name contains `part`, each with its remaining time to live in ms (-1: none). */
  async keysContaining(part: string): Promise<Array<{ key: string; pttl: number }>> {
    const out: Array<{ key: string; pttl: number }> = [];
    let cursor = '0';
    do {
      const [next, keys] = (await this.command(
        'SCAN',
        cursor,
        'MATCH',
        `*${part}*`,
        'COUNT',
        '1000',
      )) as [string, string[]];
      cursor = next;
      for (const key of keys) out.push({ key, pttl: Number(await this.command('PTTL', key)) });
    } while (cursor !== '0');
    return out;
  }

  close(): void {
    this.socket.end();
  }
}

function parse(b: Buffer, at: number): { value: unknown; end: number } | undefined {
  const nl = b.indexOf('\r\n', at);
  if (nl < 0) return undefined;
  const line = b.toString('utf8', at + 1, nl);
  switch (String.fromCharCode(b[at])) {
    case '+':
      return { value: line, end: nl + 2 };
    case '-':
      return { value: new Error(line), end: nl + 2 };
    case ':':
      return { value: Number(line), end: nl + 2 };
    case '$': {
      const n = Number(line);
      if (n < 0) return { value: null, end: nl + 2 };
      if (b.length < nl + 2 + n + 2) return undefined;
      return { value: b.toString('utf8', nl + 2, nl + 2 + n), end: nl + 2 + n + 2 };
    }
    case '*': {
      const n = Number(line);
      const items: unknown[] = [];
      let end = nl + 2;
      for (let i = 0; i < n; i++) {
        const item = parse(b, end);
        if (!item) return undefined;
        items.push(item.value);
        end = item.end;
      }
      return { value: items, end };
    }
    default:
      throw new Error(`unexpected Redis reply: ${line}`);
  }
}
