import {
  type FingerprintInput,
  isJsonContentType,
  requestFingerprint,
  sortedQuery,
} from '../../lib/gate/request-fingerprint';

const base: FingerprintInput = {
  method: 'POST',
  route: '/payments',
  query: '',
  headers: [],
  contentType: 'application/json',
  body: { amount: 5, currency: 'USD', customerId: 'c-1' },
  rawBody: undefined,
  excludeBodyPaths: new Set(),
};
const fp = (over: Partial<FingerprintInput> = {}) => requestFingerprint({ ...base, ...over });
const hex = (over: Partial<FingerprintInput> = {}) => fp(over).toString('hex');

describe('requestFingerprint', () => {
  it('is a 32-byte SHA-256 digest, stable for the same request', () => {
    expect(fp()).toHaveLength(32);
    expect(hex()).toBe(hex());
  });

  it('ignores the order of query parameters, not their values', () => {
    expect(hex({ query: 'a=1&b=2&c=3' })).toBe(hex({ query: 'c=3&a=1&b=2' }));
    expect(hex({ query: 'a=1&b=2' })).not.toBe(hex({ query: 'a=1&b=3' }));
    expect(hex({ query: 'a=1' })).not.toBe(hex());
    expect(sortedQuery('b=2&&a=1')).toBe('a=1&b=2');
  });

  it('ignores member order and whitespace of a JSON body (canonical JSON)', () => {
    const raw1 = Buffer.from('{"amount":5,"currency":"USD","customerId":"c-1"}');
    const raw2 = Buffer.from('{ "customerId": "c-1",\n "currency": "USD", "amount": 5.0 }');
    expect(hex({ body: JSON.parse(raw2.toString()) })).toBe(
      hex({ body: JSON.parse(raw1.toString()) }),
    );
    // Same with only the raw bytes available (no parsed body).
    expect(hex({ body: undefined, rawBody: raw2 })).toBe(hex({ body: undefined, rawBody: raw1 }));
    expect(hex({ body: undefined, rawBody: raw1 })).toBe(hex());
  });

  it('changes when the body changes', () => {
    expect(hex({ body: { ...(base.body as object), amount: 6 } })).not.toBe(hex());
    expect(hex({ body: { ...(base.body as object), extra: null } })).not.toBe(hex());
    expect(hex({ body: undefined })).not.toBe(hex());
  });

  it('leaves excluded body paths out, and only those', () => {
    const excludeBodyPaths = new Set(['meta.clientTimestamp']);
    const a = { ...(base.body as object), meta: { clientTimestamp: 1, source: 'ios' } };
    const b = { ...(base.body as object), meta: { clientTimestamp: 2, source: 'ios' } };
    const c = { ...(base.body as object), meta: { clientTimestamp: 1, source: 'web' } };
    expect(hex({ body: a, excludeBodyPaths })).toBe(hex({ body: b, excludeBodyPaths }));
    expect(hex({ body: a, excludeBodyPaths })).not.toBe(hex({ body: c, excludeBodyPaths }));
    expect(hex({ body: a })).not.toBe(hex({ body: b }));
  });

  it('includes configured headers: their values, and whether they are present', () => {
    const withHeader = (v: string | undefined) => hex({ headers: [['x-account', v]] });
    expect(withHeader('acct-1')).toBe(withHeader('acct-1'));
    expect(withHeader('acct-1')).not.toBe(withHeader('acct-2'));
    expect(withHeader(undefined)).not.toBe(withHeader(''));
    expect(withHeader('acct-1')).not.toBe(hex());
  });

  it('includes the method and the route template', () => {
    expect(hex({ method: 'PUT' })).not.toBe(hex());
    expect(hex({ method: 'post' })).toBe(hex());
    expect(hex({ route: '/payments/:id' })).not.toBe(hex());
  });

  it('length-prefixes every part, so one part cannot bleed into the next', () => {
    expect(hex({ route: '/ab', query: 'c=1' })).not.toBe(hex({ route: '/a', query: 'bc=1' }));
    expect(
      hex({
        headers: [
          ['x-a', 'b'],
          ['x-c', ''],
        ],
      }),
    ).not.toBe(
      hex({
        headers: [
          ['x-a', ''],
          ['x-c', 'b'],
        ],
      }),
    );
  });

  it('hashes non-JSON bodies as raw bytes', () => {
    const text = { contentType: 'text/plain', body: undefined };
    expect(hex({ ...text, rawBody: Buffer.from('a b') })).not.toBe(
      hex({ ...text, rawBody: Buffer.from('a  b') }),
    );
    expect(hex({ ...text, rawBody: Buffer.from('x') })).toBe(
      hex({ ...text, rawBody: Buffer.from('x') }),
    );
    // A JSON-looking text/plain body is not canonicalized.
    expect(
      hex({ contentType: 'text/plain', body: undefined, rawBody: Buffer.from('{"a":1,"b":2}') }),
    ).not.toBe(
      hex({ contentType: 'text/plain', body: undefined, rawBody: Buffer.from('{"b":2,"a":1}') }),
    );
  });

  it('recognizes JSON media types, +json suffixes included', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('application/json; charset=utf-8')).toBe(true);
    expect(isJsonContentType('application/merge-patch+json')).toBe(true);
    expect(isJsonContentType('application/jsonp')).toBe(false);
    expect(isJsonContentType('text/json-ish')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });

  it('keeps the digests that stored records were written with (non-ASCII parts, absent header, raw body, large body)', () => {
    // Digests of the implementation that wrote earlier records: a change to how parts are hashed
    // would turn every retry of a stored request into a 422.
    expect(
      requestFingerprint({
        method: 'post',
        route: '/payments/é',
        query: 'b=2&a=1',
        headers: [
          ['x-tenant', 'ü'],
          ['x-absent', undefined],
        ],
        contentType: 'application/json',
        body: { b: [1, 'ß'], a: { z: null } },
        rawBody: undefined,
        excludeBodyPaths: new Set(),
      }).toString('hex'),
    ).toBe('cf2f7b1fe72a67e9931377253ea90160877039477d377ba920430c3deabce179');
    expect(
      requestFingerprint({
        method: 'PUT',
        route: '/r',
        query: '',
        headers: [],
        contentType: 'text/plain',
        body: 'raw text',
        rawBody: undefined,
        excludeBodyPaths: new Set(),
      }).toString('hex'),
    ).toBe('e04d38b5382173557d9dc15543668d580f226738e3bbae021971756d87425ea8');
    // Raw bytes that are not UTF-8, astral characters (4 UTF-8 bytes), and a body of more than
    // the 4 KB that Node's small-buffer pool serves: the parts are laid out in one buffer.
    expect(
      hex({
        contentType: 'application/octet-stream',
        body: undefined,
        rawBody: Buffer.from([0, 1, 2, 255, 128]),
      }),
    ).toBe('201f77fa92e6f44282469d7c4662d622c24fa72049836beb6d1d697b8985765b');
    expect(
      hex({
        route: '/clients/Zoë/paiements',
        body: { note: 'café ☕ 𝄞', amount: 1 },
        query: 'b=é&a=1',
      }),
    ).toBe('aa2c461ef1c5c85ff563d2e27ae3051fd6414b4881d3be715ead8cd1fd8f5b1e');
    expect(
      hex({
        body: { items: Array.from({ length: 300 }, (_, i) => ({ sku: 'sku-' + i, qty: i })) },
      }),
    ).toBe('5266db0bde244d958a026d6b67491ae1f8b7e0057622014512400ec4ea253ef6');
  });
});
