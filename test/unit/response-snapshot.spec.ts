import { randomBytes } from 'node:crypto';
import { DEFAULT_STORED_HEADERS } from '../../lib/idempotency.options';
import {
  decodeSnapshot,
  encodeSnapshot,
  type ResponseSnapshot,
  storableHeaders,
} from '../../lib/gate/response-snapshot';

const snapshot: ResponseSnapshot = {
  status: 201,
  headers: [
    ['content-type', 'application/json; charset=utf-8'],
    ['location', '/payments/p-1'],
  ],
  body: Buffer.from('{"id":"p-1","secret":"card-4242"}'),
};

describe('storableHeaders', () => {
  const response = {
    'content-type': 'application/json',
    location: '/payments/1',
    etag: 'W/"1"',
    'set-cookie': ['sid=abc', 'theme=dark'],
    authorization: 'Bearer t',
    'www-authenticate': 'Bearer',
    'proxy-authenticate': 'Basic',
    'x-request-id': 'r-1',
  };

  it('keeps allow-listed headers only', () => {
    expect(storableHeaders(response, DEFAULT_STORED_HEADERS)).toEqual([
      ['content-type', 'application/json'],
      ['location', '/payments/1'],
      ['etag', 'W/"1"'],
    ]);
  });

  it('never keeps Set-Cookie or auth headers, even when the allow-list names them', () => {
    const allow = [
      'set-cookie',
      'authorization',
      'proxy-authorization',
      'www-authenticate',
      'proxy-authenticate',
      'cookie',
      'x-request-id',
    ];
    const kept = storableHeaders({ ...response, cookie: 'a=b' }, allow);
    expect(kept).toEqual([['x-request-id', 'r-1']]);
    expect(JSON.stringify(kept)).not.toMatch(/sid=|Bearer|Basic/);
  });

  it('keeps every value of a repeated header', () => {
    expect(storableHeaders({ link: ['<a>; rel=next', '<b>; rel=prev'] }, ['link'])).toEqual([
      ['link', '<a>; rel=next'],
      ['link', '<b>; rel=prev'],
    ]);
  });
});

describe('encodeSnapshot / decodeSnapshot', () => {
  it('round-trips without encryption: headers as JSON text, body bytes unchanged', () => {
    const enc = encodeSnapshot(snapshot);
    expect(enc.body!.equals(snapshot.body!)).toBe(true);
    expect(decodeSnapshot(201, enc.headers, enc.body)).toEqual({ ...snapshot, bodyOmitted: false });
  });

  it('round-trips a status-only snapshot (body over the limit, left out)', () => {
    const enc = encodeSnapshot({
      status: 200,
      headers: [['content-type', 'text/plain']],
      body: null,
      bodyOmitted: true,
    });
    const dec = decodeSnapshot(200, enc.headers, enc.body);
    expect(dec.bodyOmitted).toBe(true);
    expect(dec.body).toBeNull();
    expect(dec.headers).toEqual([['content-type', 'text/plain']]);
  });

  describe('with an AES-256-GCM key', () => {
    const key = randomBytes(32);

    it('round-trips headers and body', () => {
      const enc = encodeSnapshot(snapshot, key);
      const dec = decodeSnapshot(201, enc.headers, enc.body, key);
      expect(dec.headers).toEqual(snapshot.headers);
      expect(dec.body!.equals(snapshot.body!)).toBe(true);
      const omitted = encodeSnapshot({ ...snapshot, body: null, bodyOmitted: true }, key);
      expect(decodeSnapshot(201, omitted.headers, omitted.body, key)).toMatchObject({
        bodyOmitted: true,
      });
    });

    it('stores neither headers nor body in clear, and uses a fresh IV each time', () => {
      const a = encodeSnapshot(snapshot, key);
      const b = encodeSnapshot(snapshot, key);
      expect(a.headers).toBe('{"encrypted":1}');
      expect(a.body!.includes(Buffer.from('card-4242'))).toBe(false);
      expect(a.body!.includes(Buffer.from('/payments/p-1'))).toBe(false);
      expect(a.body!.equals(b.body!)).toBe(false);
    });

    it('detects tampering with the ciphertext, the tag or the IV', () => {
      const enc = encodeSnapshot(snapshot, key);
      for (const at of [1, 13, 29, enc.body!.length - 1]) {
        const tampered = Buffer.from(enc.body!);
        tampered[at] ^= 0x01;
        expect(() => decodeSnapshot(201, enc.headers, tampered, key)).toThrow();
      }
      expect(() =>
        decodeSnapshot(201, enc.headers, enc.body!.subarray(0, enc.body!.length - 1), key),
      ).toThrow();
    });

    it('refuses another key, a missing key and a truncated record', () => {
      const enc = encodeSnapshot(snapshot, key);
      expect(() => decodeSnapshot(201, enc.headers, enc.body, randomBytes(32))).toThrow();
      expect(() => decodeSnapshot(201, enc.headers, enc.body)).toThrow(/encryptionKey/);
      expect(() => decodeSnapshot(201, enc.headers, enc.body!.subarray(0, 20), key)).toThrow(
        /malformed/,
      );
    });
  });
});
