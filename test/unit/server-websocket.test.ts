// The response of an upgrade request (src/server/websocket.ts): what a step writes before any handshake is a plain
// HTTP answer, a head that would break the answer is refused as Node refuses it, and a handshake that cannot happen
// (the client is gone) tells the watch, so that it ends.

import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { notWebSocketHandshake, UpgradeResponse } from '../../src/server/websocket.js';

const handshake = (headers: Record<string, string> = {}) =>
  ({
    method: 'GET',
    url: '/api/v1/pods?watch=1',
    headers: { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13', ...headers },
  }) as unknown as IncomingMessage;

describe('the response of an upgrade request', () => {
  it('writes a head other than 200 as an HTTP answer, with the headers set before, then closes', () => {
    const socket = new PassThrough();
    const res = new UpgradeResponse(handshake(), socket, Buffer.alloc(0), 'audit-1');
    res.setHeader('X-Kubernetes-PF-FlowSchema-UID', 'fs');
    res.writeHead(429, { 'Retry-After': '3', 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('Too many requests, please try again later.\n');
    const answer = String(socket.read());
    expect(answer).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\nAudit-Id: audit-1\r\nX-Kubernetes-PF-FlowSchema-UID: fs\r\nRetry-After: 3\r\nContent-Type: text\/plain; charset=utf-8\r\nDate: [^\r]+\r\nContent-Length: 43\r\nConnection: close\r\n\r\nToo many requests, please try again later.\n$/);
    expect(socket.writableEnded).toBe(true);
  });

  it('refuses a header that would break the head, as Node does', () => {
    const res = new UpgradeResponse(handshake(), new PassThrough(), Buffer.alloc(0), 'audit-1');
    expect(() => res.setHeader('Warning', '299 - "a"\r\nX-Injected: 1')).toThrow(/Invalid character in header content/);
    expect(() => res.setHeader('Bad Name', 'x')).toThrow(/Header name must be a valid HTTP token/);
  });

  it('tells its watch the connection is gone when the client left before the handshake', async () => {
    const socket = new PassThrough();
    const res = new UpgradeResponse(handshake(), socket, Buffer.alloc(0), 'audit-1');
    socket.destroy();
    await new Promise((r) => setImmediate(r));
    const closed = new Promise<void>((r) => res.once('close', () => r()));
    res.writeHead(200);
    await closed;
    expect(res.destroyed).toBe(true);
    expect(res.write('{"type":"ADDED"}\n')).toBe(false);
  });

  it('knows a WebSocket handshake from other upgrades', () => {
    expect(notWebSocketHandshake(handshake())).toBeUndefined();
    expect(notWebSocketHandshake(handshake({ upgrade: 'SPDY/3.1' }))).toMatch(/^only a WebSocket upgrade serves a watch/);
    expect(notWebSocketHandshake(handshake({ 'sec-websocket-key': 'short' }))).toBe('missing or invalid Sec-WebSocket-Key header');
    expect(notWebSocketHandshake(handshake({ 'sec-websocket-version': '12' }))).toBe('missing or unsupported Sec-WebSocket-Version header (13)');
    expect(notWebSocketHandshake(handshake({ upgrade: 'WebSocket', 'sec-websocket-protocol': 'base64url.bearer.authorization.k8s.io.dG9rZW4, v4.channel.k8s.io' }))).toBeUndefined();
    for (const bad of ['a,,b', 'a, a', 'a b']) {
      expect(notWebSocketHandshake(handshake({ 'sec-websocket-protocol': bad }))).toBe('invalid Sec-WebSocket-Protocol header: a comma-separated list of distinct tokens');
    }
  });
});
