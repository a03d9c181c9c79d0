import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { endWith } from '../../lib/internal/http-platform';

/** endWith sends a body byte for byte, whichever way it writes it (one chunk or two). */
describe('endWith', () => {
  let server: Server;
  let body: Buffer = Buffer.alloc(0);
  let url = '';

  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.setHeader('Content-Type', 'application/octet-stream');
      res.setHeader('Content-Length', body.length);
      endWith(res, body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const fetchBytes = async () => Buffer.from(await (await fetch(url)).arrayBuffer());

  it('sends every byte value unchanged in a small body (sent as one chunk with the head)', async () => {
    body = Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 7 + 255) % 256));
    expect((await fetchBytes()).equals(body)).toBe(true);
  });

  it('sends a multi-byte UTF-8 body unchanged', async () => {
    body = Buffer.from('{"name":"Zoë ✓ 𝄞 ß"}', 'utf8');
    expect((await fetchBytes()).equals(body)).toBe(true);
  });

  it('sends a large body unchanged (written as a Buffer)', async () => {
    body = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 31) % 256));
    expect((await fetchBytes()).equals(body)).toBe(true);
  });

  it('sends an empty body', async () => {
    body = Buffer.alloc(0);
    expect((await fetchBytes()).length).toBe(0);
  });
});
