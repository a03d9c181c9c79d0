import { buildContextScope, buildScope, MAX_SCOPE_LENGTH } from '../../lib/gate/request-scope';

describe('buildScope', () => {
  it('scopes by tenant, principal, method and route template', () => {
    const s = buildScope('acme', 'user-1', 'post', '/payments');
    expect(s).toBe('acme|user-1|POST /payments');
    expect(buildScope('globex', 'user-1', 'POST', '/payments')).not.toBe(s);
    expect(buildScope('acme', 'user-2', 'POST', '/payments')).not.toBe(s);
    expect(buildScope('acme', 'user-1', 'PUT', '/payments')).not.toBe(s);
    expect(buildScope('acme', 'user-1', 'POST', '/refunds')).not.toBe(s);
  });

  it("a tenant or principal containing '|' cannot imitate another tenant's scope", () => {
    const a = buildScope('a|b', 'c', 'POST', '/x');
    const b = buildScope('a', 'b|c', 'POST', '/x');
    expect(a).not.toBe(b);
    // Nor can a tenant that carries the separator and a forged principal part.
    expect(buildScope('acme|-', '-', 'POST', '/x')).not.toBe(
      buildScope('acme', '-|-', 'POST', '/x'),
    );
    expect(buildScope('acme|-|POST /x', '-', 'GET', '/y')).not.toBe(
      buildScope('acme', '-', 'POST', '/x'),
    );
  });

  it('tells an escaped-looking tenant from the character it looks like', () => {
    expect(buildScope('a%7Cb', 'c', 'POST', '/x')).not.toBe(buildScope('a|b', 'c', 'POST', '/x'));
  });

  it('hashes scopes longer than the column, still distinct per tenant', () => {
    const long = (t: string) => buildScope(t + 'x'.repeat(MAX_SCOPE_LENGTH), 'p', 'POST', '/x');
    expect(long('a')).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(long('a').length).toBeLessThanOrEqual(MAX_SCOPE_LENGTH);
    expect(long('a')).not.toBe(long('b'));
    expect(long('a')).toBe(long('a'));
  });
});

describe('buildContextScope', () => {
  it('an RPC scope is never an HTTP scope, whatever the method, route or pattern', () => {
    const rpc = buildContextScope('acme', '-', 'rpc', 'payments.create');
    expect(rpc).toBe('acme|-|rpc:payments.create');
    // The third part of an HTTP scope is `METHOD route`; an HTTP method has no ':'.
    for (const [method, route] of [
      ['RPC', ':payments.create'],
      ['rpc:payments.create', ''],
      ['POST', '/payments.create'],
    ]) {
      expect(buildScope('acme', '-', method, route)).not.toBe(rpc);
    }
    // The pattern keeps its case (patterns are case-sensitive).
    expect(buildContextScope('acme', '-', 'rpc', 'Payments.Create')).not.toBe(rpc);
    expect(buildContextScope('a|b', 'c', 'rpc', 'p')).not.toBe(
      buildContextScope('a', 'b|c', 'rpc', 'p'),
    );
  });
});
