import { normalizePath, resourcePath } from '../../lib/gate/resource-path';
import { buildScope } from '../../lib/gate/request-scope';
import { pickPaths, requestFingerprint } from '../../lib/gate/request-fingerprint';

describe('resourcePath (the resource a key is scoped to)', () => {
  it('fills the route template with the router-decoded parameters', () => {
    expect(resourcePath('/customers/:id', { id: 'A' })).toBe('/customers/A');
    expect(resourcePath('/customers/:id', { id: 'B' })).toBe('/customers/B');
    expect(resourcePath('/a/:x/b/:y', { x: '1', y: '2' })).toBe('/a/1/b/2');
  });

  it('keeps routes without parameters exactly as before (the earlier scope format)', () => {
    expect(resourcePath('/payments', {})).toBe('/payments');
    expect(resourcePath('/payments', undefined)).toBe('/payments');
    expect(buildScope('t', 'p', 'POST', resourcePath('/payments', {}))).toBe('t|p|POST /payments');
  });

  it('encodes each value canonically, so a "/" inside a value cannot imitate another path', () => {
    expect(resourcePath('/files/:name', { name: 'a/b' })).toBe('/files/a%2Fb');
    expect(resourcePath('/files/:name/x', { name: 'a' })).not.toBe(
      resourcePath('/files/:name', { name: 'a/x' }),
    );
    expect(resourcePath('/files/:name', { name: 'é ü' })).toBe('/files/%C3%A9%20%C3%BC');
  });

  it('has no trailing-slash ambiguity', () => {
    expect(resourcePath('/customers/:id/', { id: 'A' })).toBe('/customers/A');
    expect(resourcePath('/', {})).toBe('/');
  });

  it('handles regex parameters, optional groups and wildcards of Express and Fastify', () => {
    expect(resourcePath('/orders/:id(\\d+)', { id: '42' })).toBe('/orders/42');
    expect(resourcePath('/orders/:id?', { id: '42' })).toBe('/orders/42');
    expect(resourcePath('/docs{/:format}', { format: 'pdf' })).toBe('/docs/pdf');
    expect(resourcePath('/docs{/:format}', {})).toBe('/docs');
    expect(resourcePath('/static/*', { '*': 'a/b c' })).toBe('/static/a/b%20c');
    expect(resourcePath('/static/*path', { path: ['a', 'b'] })).toBe('/static/a/b');
  });

  it('appends parameters the template does not name, in a fixed order', () => {
    expect(resourcePath('/x', { b: '2', a: '1' })).toBe('/x;a=1;b=2');
  });
});

describe('normalizePath (no route template known)', () => {
  it('decodes percent-encoded unreserved characters and upper-cases the other escapes', () => {
    expect(normalizePath('/customers/%41%2d%7e')).toBe('/customers/A-~');
    expect(normalizePath('/a%2fb')).toBe('/a%2Fb');
    expect(normalizePath('/customers/A/')).toBe('/customers/A');
  });
});

describe('fingerprint subsets (includeBodyPaths)', () => {
  it('picks the listed paths at their places; absent stays absent', () => {
    expect(pickPaths({ a: 1, b: { c: 2, d: 3 }, e: [1, 2] }, ['a', 'b.c', 'e.1', 'zz'])).toEqual({
      a: 1,
      b: { c: 2 },
      e: { 1: 2 },
    });
    expect(pickPaths({ a: null }, ['a'])).toEqual({ a: null });
  });

  it('ignores other fields, and tells a changed listed field', () => {
    const fp = (body: unknown) =>
      requestFingerprint({
        method: 'POST',
        route: '/p',
        query: '',
        headers: [],
        contentType: 'application/json',
        body,
        rawBody: undefined,
        excludeBodyPaths: new Set(),
        includeBodyPaths: ['amount'],
      });
    expect(fp({ amount: 1, note: 'a' }).equals(fp({ amount: 1, note: 'b' }))).toBe(true);
    expect(fp({ amount: 1 }).equals(fp({ amount: 2 }))).toBe(false);
    expect(fp({ amount: null }).equals(fp({}))).toBe(false);
  });

  it('the resource path is part of the fingerprint', () => {
    const fp = (route: string) =>
      requestFingerprint({
        method: 'PUT',
        route,
        query: '',
        headers: [],
        contentType: 'application/json',
        body: { name: 'x' },
        rawBody: undefined,
        excludeBodyPaths: new Set(),
      });
    expect(fp('/customers/A').equals(fp('/customers/B'))).toBe(false);
  });
});
