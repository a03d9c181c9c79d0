import { randomBytes } from 'node:crypto';
import { DEFAULT_STORED_HEADERS } from '../../lib/idempotency.options';
import { KeyRing } from '../../lib/encryption/key-ring';
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

  describe('with a key ring (AES-256-GCM, envelope format 2)', () => {
    const ring = KeyRing.from({ keys: [{ id: 'k1', key: randomBytes(32) }] });
    const sealing = { ring, scope: 't|p|POST|/payments', key: 'key-1' };

    it('round-trips headers and body', () => {
      const enc = encodeSnapshot(snapshot, sealing);
      const dec = decodeSnapshot(201, enc.headers, enc.body, sealing);
      expect(dec.headers).toEqual(snapshot.headers);
      expect(dec.body!.equals(snapshot.body!)).toBe(true);
      const omitted = encodeSnapshot({ ...snapshot, body: null, bodyOmitted: true }, sealing);
      expect(decodeSnapshot(201, omitted.headers, omitted.body, sealing)).toMatchObject({
        bodyOmitted: true,
      });
    });

    it('stores neither headers nor body in clear, names the key, and uses a fresh IV each time', () => {
      const a = encodeSnapshot(snapshot, sealing);
      const b = encodeSnapshot(snapshot, sealing);
      expect(JSON.parse(a.headers)).toEqual({ encrypted: 2, kid: 'k1' });
      expect(a.body!.includes(Buffer.from('card-4242'))).toBe(false);
      expect(a.body!.includes(Buffer.from('/payments/p-1'))).toBe(false);
      expect(a.body!.equals(b.body!)).toBe(false);
    });

    it('refuses another record, another status, a truncated record and no ring', () => {
      const enc = encodeSnapshot(snapshot, sealing);
      expect(() =>
        decodeSnapshot(201, enc.headers, enc.body, { ...sealing, key: 'key-2' }),
      ).toThrow(/does not authenticate/);
      expect(() => decodeSnapshot(200, enc.headers, enc.body, sealing)).toThrow(
        /does not authenticate/,
      );
      expect(() => decodeSnapshot(201, enc.headers, enc.body!.subarray(0, 20), sealing)).toThrow(
        /malformed/,
      );
      expect(() => decodeSnapshot(201, enc.headers, enc.body)).toThrow(/no encryption key/);
    });

    it('refuses a plaintext answer while a ring is set, unless acceptPlaintext', () => {
      const plain = encodeSnapshot(snapshot);
      expect(() => decodeSnapshot(201, plain.headers, plain.body, sealing)).toThrow(
        expect.objectContaining({ fault: 'plaintext' }),
      );
      const open = KeyRing.from({
        keys: [{ id: 'k1', key: randomBytes(32) }],
        acceptPlaintext: true,
      });
      const dec = decodeSnapshot(201, plain.headers, plain.body, { ...sealing, ring: open });
      expect(dec.body!.equals(snapshot.body!)).toBe(true);
    });
  });
});
