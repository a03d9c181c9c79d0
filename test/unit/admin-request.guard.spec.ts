import { crossSiteOrigin, defaultAdminPrincipal } from '../../lib/maintenance/admin-request.guard';

describe('crossSiteOrigin: which admin actions come from another site', () => {
  const host = { host: 'app.example:3000' };

  it('lets requests without browser headers through (curl, scripts, servers)', () => {
    expect(crossSiteOrigin(host, [])).toBeUndefined();
  });

  it('trusts Sec-Fetch-Site same-origin and none, refuses same-site and cross-site', () => {
    expect(crossSiteOrigin({ ...host, 'sec-fetch-site': 'same-origin' }, [])).toBeUndefined();
    expect(crossSiteOrigin({ ...host, 'sec-fetch-site': 'none' }, [])).toBeUndefined();
    expect(crossSiteOrigin({ ...host, 'sec-fetch-site': 'same-site' }, [])).toBe('same-site');
    expect(
      crossSiteOrigin(
        { ...host, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
        [],
      ),
    ).toBe('https://evil.example');
  });

  it('without Sec-Fetch-Site, compares Origin with Host or the first X-Forwarded-Host', () => {
    expect(crossSiteOrigin({ ...host, origin: 'http://app.example:3000' }, [])).toBeUndefined();
    expect(crossSiteOrigin({ ...host, origin: 'http://app.example:4000' }, [])).toBe(
      'http://app.example:4000',
    );
    expect(crossSiteOrigin({ ...host, origin: 'null' }, [])).toBe('null');
    expect(crossSiteOrigin({ ...host, origin: 'not a url' }, [])).toBe('not a url');
    expect(
      crossSiteOrigin(
        {
          host: 'internal:3000',
          'x-forwarded-host': 'ops.example, proxy.internal',
          origin: 'https://ops.example',
        },
        [],
      ),
    ).toBeUndefined();
  });

  it('lets trusted origins through, even when the browser says cross-site', () => {
    const headers = { ...host, 'sec-fetch-site': 'cross-site', origin: 'https://ops.example' };
    expect(crossSiteOrigin(headers, ['https://ops.example'])).toBeUndefined();
    expect(crossSiteOrigin(headers, ['https://other.example'])).toBe('https://ops.example');
  });
});

describe('defaultAdminPrincipal', () => {
  it('reads request.user as a string or its first identifying field', () => {
    expect(defaultAdminPrincipal({ user: 'alice' })).toBe('alice');
    expect(defaultAdminPrincipal({ user: { sub: 'auth0|42', email: 'a@x' } })).toBe('auth0|42');
    expect(defaultAdminPrincipal({ user: { email: 'a@x' } })).toBe('a@x');
    expect(defaultAdminPrincipal({ user: { roles: ['admin'] } })).toBeUndefined();
    expect(defaultAdminPrincipal({})).toBeUndefined();
  });
});
