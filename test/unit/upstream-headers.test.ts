// Which headers cross the gateway: the caller's credentials and identity claims never go upstream, the
// caller's identity goes as Impersonate-*, and connection-specific fields stay on their own hop.

import { describe, expect, it } from 'vitest';
import { isStatusError } from '../../src/api/status.js';
import { upstreamFromEndpoint, type Upstream } from '../../src/upstream/client.js';
import { appendImpersonation, extraKeyEscape, impersonationHeaders, requestHeaders, responseHeaders, withoutBearerSubprotocol } from '../../src/upstream/headers.js';
import { freezeUser } from '../../src/authn/group.js';
import type { Request } from '../../src/server/context.js';

function fakeRequest(raw: string[], remoteAddress = '10.1.2.3'): Request {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i]!.toLowerCase();
    headers[n] = headers[n] === undefined ? raw[i + 1]! : `${headers[n]}, ${raw[i + 1]}`;
  }
  return { rawHeaders: raw, headers, socket: { remoteAddress } } as unknown as Request;
}

function pairs(flat: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}

const withToken: Upstream = upstreamFromEndpoint({ name: 'cp', url: 'https://127.0.0.1:6443', token: 'gateway-secret' });
const withCert: Upstream = upstreamFromEndpoint({ name: 'cp', url: 'https://127.0.0.1:6443' });

describe('impersonationHeaders', () => {
  it('sends user, uid, each group and each extra value, leaving out the groups the upstream adds itself', () => {
    const h = impersonationHeaders({
      username: 'alice',
      uid: 'u-1',
      groups: ['dev', 'system:authenticated', 'ops, west'],
      extra: { scopes: ['a', 'b'], 'authentication.kubernetes.io/credential-id': ['X509SHA256=ab'] },
    });
    expect(h).toEqual({
      'impersonate-user': 'alice',
      'impersonate-uid': 'u-1',
      'impersonate-group': ['dev', 'ops, west'],
      'impersonate-extra-scopes': ['a', 'b'],
      'impersonate-extra-authentication.kubernetes.io%2Fcredential-id': 'X509SHA256=ab',
    });
  });

  it('leaves out system:unauthenticated for the anonymous user too', () => {
    expect(impersonationHeaders({ username: 'system:anonymous', groups: ['system:unauthenticated'] })).toEqual({ 'impersonate-user': 'system:anonymous' });
  });

  it('keeps system:authenticated where the upstream would not add it back as it was', () => {
    // A name shaped like a service account's with no group sent would get the service-account groups upstream.
    expect(impersonationHeaders({ username: 'system:serviceaccount:kube-system:fake', groups: ['system:authenticated'] })).toEqual({
      'impersonate-user': 'system:serviceaccount:kube-system:fake',
      'impersonate-group': 'system:authenticated',
    });
    // With a group of its own it gets none of them, and system:authenticated is added back.
    expect(impersonationHeaders({ username: 'system:serviceaccount:ns:sa', groups: ['system:serviceaccounts', 'system:authenticated'] })).toEqual({
      'impersonate-user': 'system:serviceaccount:ns:sa',
      'impersonate-group': 'system:serviceaccounts',
    });
    // A user in system:unauthenticated is not given system:authenticated upstream.
    expect(impersonationHeaders({ username: 'bob', groups: ['system:unauthenticated'] })).toEqual({ 'impersonate-user': 'bob', 'impersonate-group': 'system:unauthenticated' });
    expect(impersonationHeaders({ username: 'bob', groups: ['system:authenticated', 'system:unauthenticated'] })).toEqual({
      'impersonate-user': 'bob',
      'impersonate-group': ['system:authenticated', 'system:unauthenticated'],
    });
  });

  it('sends non-ASCII names as their UTF-8 bytes, which is how Go reads header values', () => {
    const h = impersonationHeaders({ username: 'jürgen@example.com', groups: ['équipe'] });
    expect(Buffer.from(h['impersonate-user'] as string, 'latin1').toString('utf8')).toBe('jürgen@example.com');
    expect(Buffer.from(h['impersonate-group'] as string, 'latin1').toString('utf8')).toBe('équipe');
  });

  it('refuses identities it cannot send faithfully', () => {
    for (const user of [{ username: '', groups: [] }, { username: 'eve\r\nImpersonate-Group: system:masters', groups: [] }]) {
      let err: unknown;
      try {
        impersonationHeaders(user);
      } catch (e) {
        err = e;
      }
      expect(isStatusError(err)).toBe(true);
      expect((err as any).status.code).toBe(500);
    }
  });

  it("keeps a frozen user's headers for the next request, and works out an unfrozen user's every time", () => {
    const user = () => ({ username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { 'authentication.kubernetes.io/credential-id': ['X509SHA256=ab'] } });
    const expected = impersonationHeaders(user());
    const frozen = freezeUser(user());
    expect(impersonationHeaders(frozen)).toEqual(expected);
    expect(impersonationHeaders(frozen)).toEqual(expected);
    // A request's own header list is never the kept one: appending to it leaves the next request's alone.
    const first: string[] = [];
    appendImpersonation(first, frozen);
    first.push('impersonate-group', 'system:masters');
    const second: string[] = [];
    appendImpersonation(second, frozen);
    expect(second).not.toContain('system:masters');
    // An identity that can still change (not frozen) is read afresh.
    const open = user();
    expect(impersonationHeaders(open)).toEqual(expected);
    open.groups.push('ops');
    expect(impersonationHeaders(open)['impersonate-group']).toEqual(['dev', 'ops']);
  });
});

describe('extraKeyEscape', () => {
  it('keeps token characters and %-encodes the rest, upper case included, so the key survives lower-casing', () => {
    expect(extraKeyEscape('scopes')).toBe('scopes');
    expect(extraKeyEscape('example.com/team')).toBe('example.com%2Fteam');
    expect(extraKeyEscape('example.com/Team')).toBe('example.com%2F%54eam');
    expect(extraKeyEscape('100%')).toBe('100%25');
    expect(extraKeyEscape('a b')).toBe('a%20b');
    expect(extraKeyEscape('ключ')).toBe('%D0%BA%D0%BB%D1%8E%D1%87');
  });

  it('round-trips through what the impersonation filter does: lower-case, then path-unescape', () => {
    for (const key of ['example.com/Team', 'a%b', 'ключ/X', 'UPPER_lower-1.2']) {
      const header = ('Impersonate-Extra-' + extraKeyEscape(key)).toLowerCase().slice('impersonate-extra-'.length);
      expect(decodeURIComponent(header)).toBe(key);
    }
  });
});

describe('requestHeaders', () => {
  it('drops credentials, identity claims, hop-by-hop fields and pseudo-headers, and keeps the rest in order', () => {
    const req = fakeRequest([
      ':path', '/api',
      'Host', 'gateway.example.com',
      'Authorization', 'Bearer caller-secret',
      'Impersonate-User', 'root',
      'Impersonate-Group', 'system:masters',
      'Impersonate-Extra-Scopes', 'all',
      'Impersonate-Uid', '0',
      'X-Remote-User', 'root',
      'X-Remote-Group', 'system:masters',
      'X-Remote-Extra-Foo', 'bar',
      'Connection', 'keep-alive, X-Private',
      'X-Private', 'hop',
      'Keep-Alive', 'timeout=5',
      'TE', 'trailers',
      'Transfer-Encoding', 'chunked',
      'Upgrade', 'h2c',
      'Proxy-Authorization', 'Basic eA==',
      'Accept', 'application/vnd.kubernetes.protobuf',
      'Accept', 'application/json',
      'Accept-Encoding', 'gzip',
      'Content-Type', 'application/vnd.kubernetes.protobuf',
      'Content-Length', '12',
      'User-Agent', 'kubectl/v1.33.0',
      'If-None-Match', '"abc"',
      'Audit-ID', 'client-chosen',
    ]);
    const h = pairs(requestHeaders(withToken, req, { auditID: 'audit-1', impersonate: { username: 'alice', groups: ['dev', 'system:authenticated'] }, keepContentLength: false }));
    expect(h).toEqual([
      ['accept', 'application/vnd.kubernetes.protobuf'],
      ['accept', 'application/json'],
      ['accept-encoding', 'gzip'],
      ['content-type', 'application/vnd.kubernetes.protobuf'],
      ['user-agent', 'kubectl/v1.33.0'],
      ['if-none-match', '"abc"'],
      ['x-forwarded-for', '10.1.2.3'],
      ['audit-id', 'audit-1'],
      ['authorization', 'Bearer gateway-secret'],
      ['impersonate-user', 'alice'],
      ['impersonate-group', 'dev'],
    ]);
  });

  it('keeps Content-Length when the body streams through unchanged, and appends the peer to X-Forwarded-For', () => {
    const req = fakeRequest(['Content-Length', '12', 'X-Forwarded-For', '192.0.2.1', 'x-forwarded-for', '198.51.100.7'], '::ffff:127.0.0.1');
    const h = pairs(requestHeaders(withCert, req, { auditID: 'a', keepContentLength: true }));
    expect(h).toEqual([
      ['content-length', '12'],
      ['x-forwarded-for', '192.0.2.1, 198.51.100.7, 127.0.0.1'],
      ['audit-id', 'a'],
    ]);
  });

  it('keeps Upgrade on tunnels and removes the WebSocket bearer-token subprotocol', () => {
    const req = fakeRequest([
      'Connection', 'Upgrade',
      'Upgrade', 'websocket',
      'Sec-WebSocket-Protocol', 'v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.c2VjcmV0, v4.channel.k8s.io',
      'Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ==',
    ]);
    const h = pairs(requestHeaders(withCert, req, { auditID: 'a', keepContentLength: true, upgrade: true, impersonate: { username: 'bob', groups: [] } }));
    expect(h).toContainEqual(['upgrade', 'websocket']);
    expect(h).toContainEqual(['connection', 'Upgrade']);
    expect(h).toContainEqual(['sec-websocket-protocol', 'v5.channel.k8s.io,v4.channel.k8s.io']);
    expect(h).toContainEqual(['sec-websocket-key', 'dGhlIHNhbXBsZSBub25jZQ==']);
    expect(JSON.stringify(h)).not.toContain('c2VjcmV0');
  });

  it('replaces Accept and omits named fields when asked (discovery)', () => {
    const req = fakeRequest(['Accept', 'application/vnd.kubernetes.protobuf', 'If-None-Match', '"x"', 'User-Agent', 'k']);
    const h = pairs(requestHeaders(withCert, req, { auditID: 'a', keepContentLength: false, accept: 'application/json', omit: new Set(['if-none-match']) }));
    expect(h).toEqual([['user-agent', 'k'], ['accept', 'application/json'], ['x-forwarded-for', '10.1.2.3'], ['audit-id', 'a']]);
  });
});

describe('withoutBearerSubprotocol', () => {
  it('leaves other protocol lists alone and reports when nothing is left', () => {
    expect(withoutBearerSubprotocol('v5.channel.k8s.io')).toBe('v5.channel.k8s.io');
    expect(withoutBearerSubprotocol('base64url.bearer.authorization.k8s.io.eA')).toBeUndefined();
  });
});

describe('responseHeaders', () => {
  it('drops connection-specific fields, including those the upstream names in Connection', () => {
    const fromUndici: Record<string, string | string[]> = {
      'content-type': 'application/json',
      'transfer-encoding': 'chunked',
      connection: 'keep-alive, x-hop',
      'keep-alive': 'timeout=5',
      'x-hop': '1',
      'audit-id': 'a',
      'warning': ['299 - "one"', '299 - "two"'],
      etag: '"E"',
      vary: 'Accept',
    };
    expect(responseHeaders(fromUndici)).toEqual({ 'content-type': 'application/json', 'audit-id': 'a', warning: ['299 - "one"', '299 - "two"'], etag: '"E"', vary: 'Accept' });
    // One token, with no comma to split on.
    expect(responseHeaders({ connection: ' X-Hop ', 'x-hop': '1', etag: '"E"' })).toEqual({ etag: '"E"' });
  });
});
