import { createServer } from 'node:net';

/** A free TCP port on loopback (tests and benchmarks alike). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as any).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}
