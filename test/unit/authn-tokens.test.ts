// Static token file (kube-apiserver's CSV), bearer header and WebSocket protocol parsing, the token union and
// anonymous, and the SelfSubjectReview body.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StatusError } from '../../src/api/status.js';
import { bearerTokenFromHeader, bearerTokenFromWebSocketProtocol } from '../../src/authn/bearer.js';
import { anonymousUser, newAuthenticator, type Authenticator } from '../../src/authn/index.js';
import { selfSubjectReviewResponse } from '../../src/authn/selfsubjectreview.js';
import { parseCsv, parseTokenFile } from '../../src/authn/tokenfile.js';

function fakeReq(headers: Record<string, string>): IncomingMessage {
  return { headers, socket: {} } as unknown as IncomingMessage;
}

describe('token file CSV', () => {
  it('parses token,user,uid,"groups" records as kube-apiserver does', () => {
    const t = parseTokenFile('t1,alice,u-1,"dev,ops"\nt2,bob,,\r\n\nt3,carol,u-3\n', 'tokens.csv');
    expect(Object.fromEntries(t.tokens)).toEqual({
      t1: { username: 'alice', uid: 'u-1', groups: ['dev', 'ops'] },
      // An empty fourth column is one empty group, as strings.Split("", ",") gives.
      t2: { username: 'bob', groups: [''] },
      t3: { username: 'carol', uid: 'u-3', groups: [] },
    });
    expect(t.warnings).toEqual([]);
  });

  it('skips empty tokens and lets a duplicate win, with upstream\'s warnings', () => {
    const t = parseTokenFile(',nobody,u\nt1,a,1\nt1,b,2\n', 'f.csv');
    expect(t.tokens.get('t1')?.username).toBe('b');
    expect(t.tokens.size).toBe(1);
    expect(t.warnings.map((w) => w.message)).toEqual([
      "empty token has been found in token file 'f.csv', record number '1'",
      "duplicate token has been found in token file 'f.csv', record number '3'",
    ]);
  });

  it('refuses records with fewer than three columns', () => {
    expect(() => parseTokenFile('t1,alice\n', '/etc/tokens.csv')).toThrow(
      "token file '/etc/tokens.csv' must have at least 3 columns (token, user name, user uid), found 2",
    );
  });

  it('follows encoding/csv quoting rules', () => {
    expect(parseCsv('"a ""q"" b",c\n"multi\nline",x')).toEqual([
      ['a "q" b', 'c'],
      ['multi\nline', 'x'],
    ]);
    expect(() => parseCsv('ab"c,d\n')).toThrow('parse error on line 1, column 3: bare " in non-quoted-field');
    expect(() => parseCsv('"abc\n')).toThrow('extraneous or missing " in quoted-field');
    expect(() => parseCsv('"a"b,c\n')).toThrow('extraneous or missing " in quoted-field');
  });
});

describe('bearer token parsing', () => {
  it('reads Authorization: Bearer like bearertoken.Authenticator', () => {
    expect(bearerTokenFromHeader({ authorization: 'Bearer abc' })).toEqual({ kind: 'token', token: 'abc' });
    expect(bearerTokenFromHeader({ authorization: '  bearer abc extra ' })).toEqual({ kind: 'token', token: 'abc' });
    expect(bearerTokenFromHeader({ authorization: 'Basic YTpi' })).toEqual({ kind: 'none' });
    expect(bearerTokenFromHeader({ authorization: 'Bearer  abc' })).toEqual({ kind: 'none' });
    expect(bearerTokenFromHeader({ authorization: 'Bearer' })).toEqual({ kind: 'none' });
    expect(bearerTokenFromHeader({})).toEqual({ kind: 'none' });
  });

  it('reads the WebSocket protocol token only on upgrades, and rejects a bad encoding', () => {
    const proto = 'base64url.bearer.authorization.k8s.io.' + Buffer.from('tok').toString('base64url');
    expect(bearerTokenFromWebSocketProtocol({ upgrade: 'websocket', 'sec-websocket-protocol': `v5.channel.k8s.io, ${proto}` })).toEqual({
      kind: 'token',
      token: 'tok',
    });
    expect(bearerTokenFromWebSocketProtocol({ 'sec-websocket-protocol': proto })).toEqual({ kind: 'none' });
    expect(
      bearerTokenFromWebSocketProtocol({ upgrade: 'WebSocket', 'sec-websocket-protocol': 'base64url.bearer.authorization.k8s.io.a=b' }).kind,
    ).toBe('invalid');
  });
});

describe('newAuthenticator with a token file', () => {
  let dir = '';
  let authn: Authenticator;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'authn-tokens-'));
    await writeFile(join(dir, 'tokens.csv'), 'tok-alice,alice,u-1,dev\ntok-admin,root,,"system:masters,system:authenticated"\n');
    authn = await newAuthenticator({ anonymous: true, x509: true, oidc: [], tokenFile: join(dir, 'tokens.csv') });
  });
  afterAll(async () => {
    authn?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('authenticates a known token and adds system:authenticated once', async () => {
    expect(await authn.authenticate(fakeReq({ authorization: 'Bearer tok-alice' }))).toEqual({
      username: 'alice',
      uid: 'u-1',
      groups: ['dev', 'system:authenticated'],
    });
    expect((await authn.authenticate(fakeReq({ authorization: 'Bearer tok-admin' })))?.groups).toEqual([
      'system:masters',
      'system:authenticated',
    ]);
  });

  it('returns null without a credential (anonymous is the caller\'s call) and 401 for an unknown token', async () => {
    expect(await authn.authenticate(fakeReq({}))).toBeNull();
    expect(await authn.authenticate(fakeReq({ authorization: 'Basic YTpi' }))).toBeNull();
    const err = await authn.authenticate(fakeReq({ authorization: 'Bearer nope' })).catch((e) => e);
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).status).toMatchObject({ code: 401, reason: 'Unauthorized', message: 'Unauthorized' });
  });

  it('accepts the token in the WebSocket protocol header', async () => {
    const proto = 'base64url.bearer.authorization.k8s.io.' + Buffer.from('tok-alice').toString('base64url');
    expect((await authn.authenticate(fakeReq({ upgrade: 'websocket', 'sec-websocket-protocol': proto })))?.username).toBe('alice');
    await expect(
      authn.authenticate(fakeReq({ upgrade: 'websocket', 'sec-websocket-protocol': 'base64url.bearer.authorization.k8s.io.' + Buffer.from('x').toString('base64url') })),
    ).rejects.toBeInstanceOf(StatusError);
  });

  it('hands out users nobody can edit in place', async () => {
    const u = (await authn.authenticate(fakeReq({ authorization: 'Bearer tok-alice' })))!;
    expect(() => u.groups.push('system:masters')).toThrow(TypeError);
    expect((await authn.authenticate(fakeReq({ authorization: 'Bearer tok-alice' })))?.groups).toEqual(['dev', 'system:authenticated']);
  });

  it('refuses to start with a malformed token file', async () => {
    await writeFile(join(dir, 'bad.csv'), 'only,two\n');
    await expect(newAuthenticator({ anonymous: false, x509: false, oidc: [], tokenFile: join(dir, 'bad.csv') })).rejects.toThrow(
      'must have at least 3 columns',
    );
  });

  it('anonymousUser is system:anonymous in system:unauthenticated only', () => {
    expect(anonymousUser()).toEqual({ username: 'system:anonymous', groups: ['system:unauthenticated'] });
  });
});

describe('selfSubjectReviewResponse', () => {
  it('is kube-apiserver\'s SelfSubjectReview: kind, version, creationTimestamp and the user, extra keys sorted', () => {
    const before = Math.floor(Date.now() / 1000) * 1000;
    const r = selfSubjectReviewResponse(
      { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { zeta: ['1'], alpha: ['a', 'b'] } },
      'authentication.k8s.io/v1',
    ) as any;
    expect(r).toEqual({
      kind: 'SelfSubjectReview',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { creationTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) },
      status: { userInfo: { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { alpha: ['a', 'b'], zeta: ['1'] } } },
    });
    expect(Object.keys(r)).toEqual(['kind', 'apiVersion', 'metadata', 'status']);
    expect(Object.keys(r.status.userInfo.extra)).toEqual(['alpha', 'zeta']);
    const ts = Date.parse(r.metadata.creationTimestamp);
    expect(ts).toBeGreaterThanOrEqual(before);
    expect(ts).toBeLessThanOrEqual(Date.now());
  });

  it('leaves out empty uid, groups and extra, and keeps the requested version', () => {
    const r = selfSubjectReviewResponse({ username: 'system:anonymous', groups: [], extra: {} }, 'authentication.k8s.io/v1beta1') as any;
    expect(r.apiVersion).toBe('authentication.k8s.io/v1beta1');
    expect(r.status).toEqual({ userInfo: { username: 'system:anonymous' } });
  });
});
