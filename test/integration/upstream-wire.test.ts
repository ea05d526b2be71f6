// What crosses the wire between the gateway and its upstream, seen from a recording upstream: headers, bodies
// byte for byte, per-chunk streaming, aborts, deadlines, failures, and what an upgrade tunnel lets through.

import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { connect as h2connect, createSecureServer, type Http2SecureServer } from 'node:http2';
import { gzipSync } from 'node:zlib';
import { createCA, issueServingCert } from '../../src/pki/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusBody, toStatus } from '../../src/api/status.js';
import type { UserInfo } from '../../src/api/user.js';
import { upstreamFromEndpoint, type Upstream } from '../../src/upstream/client.js';
import { forward } from '../../src/upstream/forward.js';
import { forwardUpgrade } from '../../src/upstream/upgrade.js';

interface Seen {
  method: string;
  url: string;
  raw: string[];
  body: Buffer;
}

const ALICE: UserInfo = { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['view'] } };
const GZIPPED = gzipSync(Buffer.from('{"kind":"PodList","items":[]}'));

let echo: Server;
let echoUp: Upstream;
// Answers every request head it reads with a 404 and keeps reading the connection, as Go's server does for an
// upgrade request its handler refuses: bytes behind the request would be served as the next request.
let pipelining: TcpServer;
let pipeliningUp: Upstream;
const pipelined: string[] = [];
let downUp: Upstream;
let downPort: number;
let gw: Server;
let base: string;
// The same gateway over TLS with HTTP/2, as client-go talks to it.
let gw2: Http2SecureServer;
let base2: string;
let ca2: string;
const seen: Seen[] = [];
const results: number[] = [];
let streamRes: ServerResponse | undefined;
let streamClosedEarly: Promise<void>;
let markStreamClosed = () => {};
/** Closes when the connection of the upstream's latest request does. */
let lastConnectionClosed: Promise<void> = Promise.resolve();

async function listen(s: Server): Promise<number> {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return (s.address() as AddressInfo).port;
}

function header(raw: string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) out.push(raw[i + 1]!);
  return out;
}

beforeAll(async () => {
  echo = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    seen.push({ method: req.method!, url: req.url!, raw: req.rawHeaders, body });
    lastConnectionClosed = new Promise<void>((resolve) => (req.socket.destroyed ? resolve() : req.socket.once('close', () => resolve())));
    const path = new URL(req.url!, 'http://echo').pathname;
    switch (path) {
      case '/echo':
        res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream', 'x-echo': 'yes' });
        return void res.end(body);
      case '/gzip':
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', vary: 'Accept-Encoding' });
        return void res.end(GZIPPED);
      case '/hop':
        res.writeHead(200, { connection: 'x-private', 'x-private': 'hop', 'keep-alive': 'timeout=77', 'x-public': 'kept', 'content-type': 'text/plain' });
        return void res.end('ok');
      case '/stream':
        streamRes = res;
        res.on('close', () => {
          if (!res.writableFinished) markStreamClosed();
        });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"type":"ADDED"}\n');
        return;
      case '/quiet':
        // A watch with nothing to say yet: headers only, the body stays open.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        return;
      case '/hang':
        return; // never answers
      case '/refuse-sized': {
        const b = Buffer.from('{"kind":"Status","message":"sized"}');
        res.writeHead(403, { 'content-type': 'application/json', 'content-length': String(b.length) });
        return void res.end(b);
      }
      case '/garbage':
        req.socket.end('SPDY/9 banana\r\n\r\n');
        return;
      default:
        // Also what an upgrade request gets here: this server has no 'upgrade' listener, so Node answers it as
        // an ordinary request on a keep-alive connection, the way a refusing upstream would.
        res.writeHead(404, { 'content-type': 'application/json' });
        return void res.end(statusBody({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'nope', reason: 'NotFound', code: 404 }));
    }
  });
  const echoPort = await listen(echo);
  echoUp = upstreamFromEndpoint({ name: 'control-plane', url: `http://127.0.0.1:${echoPort}`, token: 'gateway-token' });

  pipelining = createTcpServer((sock) => {
    let buf = '';
    sock.on('data', (c: Buffer) => {
      buf += c.toString('latin1');
      let end: number;
      while ((end = buf.indexOf('\r\n\r\n')) >= 0) {
        pipelined.push(buf.slice(0, buf.indexOf('\r\n')));
        buf = buf.slice(end + 4);
        const body = '{"kind":"Status","message":"refused"}';
        sock.write(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      }
    });
    sock.on('error', () => {});
  });
  await new Promise<void>((resolve) => pipelining.listen(0, '127.0.0.1', resolve));
  pipeliningUp = upstreamFromEndpoint({ name: 'control-plane', url: `http://127.0.0.1:${(pipelining.address() as AddressInfo).port}` });

  const probe = createServer();
  downPort = await listen(probe);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  downUp = upstreamFromEndpoint({ name: 'control-plane', url: `https://127.0.0.1:${downPort}`, token: 'gateway-token' });

  const handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
    const upstream = req.headers['x-test-upstream'] === 'down' ? downUp : echoUp;
    const t = req.headers['x-test-timeout'];
    const body = req.headers['x-test-body'];
    forward(upstream, req, res, 'audit-gw', {
      impersonate: ALICE,
      timeoutMs: typeof t === 'string' ? Number(t) : undefined,
      body: typeof body === 'string' ? Buffer.from(body) : undefined,
    })
      .then((code) => results.push(code))
      .catch((e) => {
        const s = toStatus(e);
        res.writeHead(s.code, { 'content-type': 'application/json' });
        res.end(statusBody(s));
      });
  };
  gw = createServer(handler);
  const ca = await createCA('upstream-wire-test-ca');
  const serving = await issueServingCert(ca, ['127.0.0.1']);
  ca2 = ca.certPem;
  gw2 = createSecureServer({ cert: serving.certPem, key: serving.keyPem, allowHTTP1: true }, handler);
  base2 = `127.0.0.1:${await new Promise<number>((resolve) => gw2.listen(0, '127.0.0.1', () => resolve((gw2.address() as AddressInfo).port)))}`;
  gw.on('upgrade', (req, socket, head) => {
    const which = req.headers['x-test-upstream'];
    const upstream = which === 'down' ? downUp : which === 'pipelining' ? pipeliningUp : echoUp;
    forwardUpgrade(upstream, req, socket, head, 'audit-gw', ALICE, { handshakeTimeoutMs: 2000 });
  });
  base = `127.0.0.1:${await listen(gw)}`;
});

afterAll(async () => {
  gw?.closeAllConnections();
  echo?.closeAllConnections();
  await new Promise<void>((resolve) => (gw2 ? gw2.close(() => resolve()) : resolve()));
  await Promise.all([gw, echo].map((s) => new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()))));
  await new Promise<void>((resolve) => (pipelining ? pipelining.close(() => resolve()) : resolve()));
  await echoUp?.close();
  await downUp?.close();
  await pipeliningUp?.close();
});

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json(): any;
}

function send(method: string, path: string, headers: Record<string, string | string[]> = {}, body?: Buffer | string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`http://${base}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const b = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, headers: res.headers, body: b, json: () => JSON.parse(b.toString()) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function last(): Seen {
  return seen[seen.length - 1]!;
}

describe('request headers', () => {
  it("sends the gateway's credential and the caller's identity, never the caller's own credential or claims", async () => {
    const r = await send('GET', '/echo?x=1', {
      authorization: 'Bearer caller-secret',
      'impersonate-user': 'root',
      'impersonate-group': 'system:masters',
      'x-remote-user': 'root',
      accept: 'application/vnd.kubernetes.protobuf, application/json',
      'accept-encoding': 'gzip',
      'user-agent': 'kubectl/v1.33.0 (linux/amd64)',
      'if-none-match': '"E"',
      'audit-id': 'client-audit',
      'x-forwarded-for': '192.0.2.9',
    });
    expect(r.status).toBe(200);
    const s = last();
    expect(s.url).toBe('/echo?x=1');
    expect(header(s.raw, 'authorization')).toEqual(['Bearer gateway-token']);
    expect(header(s.raw, 'impersonate-user')).toEqual(['alice']);
    expect(header(s.raw, 'impersonate-uid')).toEqual(['u-1']);
    expect(header(s.raw, 'impersonate-group')).toEqual(['dev']);
    expect(header(s.raw, 'impersonate-extra-scopes')).toEqual(['view']);
    expect(header(s.raw, 'x-remote-user')).toEqual([]);
    expect(header(s.raw, 'accept')).toEqual(['application/vnd.kubernetes.protobuf, application/json']);
    expect(header(s.raw, 'accept-encoding')).toEqual(['gzip']);
    expect(header(s.raw, 'user-agent')).toEqual(['kubectl/v1.33.0 (linux/amd64)']);
    expect(header(s.raw, 'if-none-match')).toEqual(['"E"']);
    expect(header(s.raw, 'audit-id')).toEqual(['audit-gw']);
    expect(header(s.raw, 'x-forwarded-for')).toEqual(['192.0.2.9, 127.0.0.1']);
    expect(JSON.stringify(s.raw)).not.toContain('caller-secret');
    expect(r.headers['x-echo']).toBe('yes');
  });
});

describe('bodies', () => {
  it('passes a protobuf body through byte for byte, both ways', async () => {
    const body = Buffer.concat([Buffer.from('k8s\0'), Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7) % 256))]);
    const r = await send('PUT', '/echo', { 'content-type': 'application/vnd.kubernetes.protobuf' }, body);
    expect(r.status).toBe(200);
    expect(last().body.equals(body)).toBe(true);
    expect(header(last().raw, 'content-length')).toEqual([String(body.length)]);
    expect(r.headers['content-type']).toBe('application/vnd.kubernetes.protobuf');
    expect(r.body.equals(body)).toBe(true);
  });

  it('streams a chunked request body', async () => {
    const r = await new Promise<Reply>((resolve, reject) => {
      const req = request(`http://${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks), json: () => null }));
      });
      req.on('error', reject);
      req.write('{"a":');
      setImmediate(() => req.end('1}'));
    });
    expect(r.body.toString()).toBe('{"a":1}');
    expect(last().body.toString()).toBe('{"a":1}');
  });

  it('sends an already-read body (admission) with its own length', async () => {
    await send('POST', '/echo', { 'content-type': 'application/json', 'x-test-body': '{"mutated":true}' }, '{"original":true}');
    expect(last().body.toString()).toBe('{"mutated":true}');
    expect(header(last().raw, 'content-length')).toEqual(['16']);
  });

  it('passes a gzip response through compressed and untouched', async () => {
    const r = await send('GET', '/gzip', { 'accept-encoding': 'gzip' });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers.vary).toBe('Accept-Encoding');
    expect(r.body.equals(GZIPPED)).toBe(true);
  });

  it('does not pass connection-specific response headers', async () => {
    const r = await send('GET', '/hop');
    expect(r.headers['x-public']).toBe('kept');
    expect(r.headers['x-private']).toBeUndefined();
    expect(r.headers['keep-alive']).not.toBe('timeout=77');
  });
});

describe('streaming', () => {
  it('writes each chunk as it arrives and aborts the upstream request when the client goes away', async () => {
    streamClosedEarly = new Promise<void>((resolve) => (markStreamClosed = resolve));
    const before = results.length;
    const ac = new AbortController();
    const got: string[] = [];
    let more = () => {};
    await new Promise<void>((resolve, reject) => {
      const req = request(`http://${base}/stream`, { signal: ac.signal }, (res) => {
        res.on('data', (c: Buffer) => {
          got.push(c.toString());
          more();
        });
        res.on('error', () => {});
        resolve();
      });
      req.on('error', (e) => (ac.signal.aborted ? undefined : reject(e)));
      req.end();
    });
    const waitFor = (n: number) =>
      new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`got ${JSON.stringify(got)}`)), 3000);
        more = () => {
          if (got.join('').split('\n').length - 1 >= n) {
            clearTimeout(t);
            resolve();
          }
        };
        more();
      });
    await waitFor(1); // the upstream has not ended: only per-chunk flushing gets this here
    streamRes!.write('{"type":"MODIFIED"}\n');
    await waitFor(2);
    expect(got.join('')).toBe('{"type":"ADDED"}\n{"type":"MODIFIED"}\n');
    ac.abort();
    await streamClosedEarly; // the upstream saw the request go away
    await until(() => results.length > before);
    expect(results[before]).toBe(200);
  });
});

describe('response headers', () => {
  it("reach the client while the upstream's body has not begun (a quiet watch is seen as open)", async () => {
    const ac = new AbortController();
    const t0 = performance.now();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`http://${base}/quiet`, { signal: ac.signal }, (res) => resolve(res.statusCode!));
      req.on('error', (e) => (ac.signal.aborted ? undefined : reject(e)));
      req.end();
    });
    expect(status).toBe(200);
    // Well before any timeout: the gateway flushes the head once its turn has no body for it.
    expect(performance.now() - t0).toBeLessThan(1000);
    ac.abort();
  }, 10_000);
});

describe('HTTP/2 clients', () => {
  it('get bodies byte for byte, no connection-specific headers, and streamed chunks', async () => {
    const session = h2connect(`https://${base2}`, { ca: ca2 });
    try {
      const exchange = (path: string, body?: Buffer) =>
        new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
          const st = session.request({ ':method': body ? 'PUT' : 'GET', ':path': path, 'content-type': 'application/vnd.kubernetes.protobuf', authorization: 'Bearer caller-secret' }, { endStream: !body });
          let headers: Record<string, unknown> = {};
          const chunks: Buffer[] = [];
          st.on('response', (h) => (headers = h));
          st.on('data', (c: Buffer) => chunks.push(c));
          st.on('end', () => resolve({ headers, body: Buffer.concat(chunks) }));
          st.on('error', reject);
          if (body) st.end(body);
        });
      const payload = Buffer.concat([Buffer.from('k8s\0'), Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 13) % 256))]);
      const put = await exchange('/echo', payload);
      expect(put.headers[':status']).toBe(200);
      expect(put.body.equals(payload)).toBe(true);
      expect(last().body.equals(payload)).toBe(true);
      expect(header(last().raw, 'authorization')).toEqual(['Bearer gateway-token']);

      const hop = await exchange('/hop');
      expect(hop.headers[':status']).toBe(200);
      expect(hop.headers['x-public']).toBe('kept');
      expect(hop.body.toString()).toBe('ok');

      // A GET over h2 has no body: nothing is streamed upstream.
      const get = await exchange('/echo?h2');
      expect(get.headers[':status']).toBe(200);
      expect(last().body.length).toBe(0);
      expect(header(last().raw, 'content-length')).toEqual([]);

      const got: string[] = [];
      const st = session.request({ ':path': '/stream' });
      let more = () => {};
      st.on('data', (c: Buffer) => {
        got.push(c.toString());
        more();
      });
      const lines = (n: number) =>
        new Promise<void>((resolve, reject) => {
          const t = setTimeout(() => reject(new Error(`got ${JSON.stringify(got)}`)), 3000);
          more = () => {
            if (got.join('').split('\n').length - 1 >= n) {
              clearTimeout(t);
              resolve();
            }
          };
          more();
        });
      await lines(1);
      streamRes!.end('{"type":"DELETED"}\n');
      await lines(2);
      expect(got.join('')).toBe('{"type":"ADDED"}\n{"type":"DELETED"}\n');
    } finally {
      session.close();
    }
  });
});

describe('failures', () => {
  it('answers 503 naming the upstream when it is down', async () => {
    const t0 = Date.now();
    const r = await send('GET', '/api', { 'x-test-upstream': 'down' });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(r.status).toBe(503);
    expect(r.json()).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'ServiceUnavailable',
      message: `the control plane "control-plane" (https://127.0.0.1:${downPort}) is unavailable: connect ECONNREFUSED 127.0.0.1:${downPort}`,
      code: 503,
    });
    expect(JSON.stringify(r.json())).not.toContain('gateway-token');
  });

  it('answers 504 when the upstream does not answer within the deadline, and abandons the request', async () => {
    const n = seen.length;
    const r = await send('GET', '/hang', { 'x-test-timeout': '300' });
    expect(r.status).toBe(504);
    expect(r.json()).toMatchObject({ reason: 'Timeout', message: expect.stringMatching(/^Timeout: the control plane "control-plane" \(http:\/\/127\.0\.0\.1:\d+\) did not respond within 0\.3s$/), details: {} });
    expect(seen.length).toBe(n + 1);
    await lastConnectionClosed; // undici dropped the connection the request was waiting on
  });

  it('answers 502 when the upstream does not speak HTTP', async () => {
    const r = await send('GET', '/garbage');
    expect(r.status).toBe(502);
    expect(r.json().message).toMatch(/^the control plane "control-plane" \(http:\/\/127\.0\.0\.1:\d+\) failed to answer: /);
  });
});

describe('upgrade tunnels', () => {
  function rawUpgrade(extra: string, headers: Record<string, string> = {}, path = '/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true'): Promise<{ text: string; socket: Socket }> {
    return new Promise((resolve, reject) => {
      const [host, port] = base.split(':');
      const socket = connect(Number(port), host!, () => {
        let head = `GET ${path} HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
          'Sec-WebSocket-Protocol: v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.Y2FsbGVyLXNlY3JldA\r\nAuthorization: Bearer caller-secret\r\n';
        for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
        socket.write(head + '\r\n' + extra);
      });
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve({ text, socket }));
    });
  }

  it('sends the gateway credential and impersonation, and relays a chunked refusal as it is', async () => {
    const n = seen.length;
    const { text } = await rawUpgrade('');
    expect(text).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
    expect(text).toMatch(/transfer-encoding: chunked\r\n/i);
    expect(text).toContain('"message":"nope"');
    expect(text.endsWith('0\r\n\r\n')).toBe(true);
    expect(seen.length).toBe(n + 1);
    const s = last();
    expect(s.url).toBe('/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true');
    expect(header(s.raw, 'authorization')).toEqual(['Bearer gateway-token']);
    expect(header(s.raw, 'impersonate-user')).toEqual(['alice']);
    expect(header(s.raw, 'upgrade')).toEqual(['websocket']);
    expect(header(s.raw, 'connection')).toEqual(['Upgrade']);
    expect(header(s.raw, 'sec-websocket-protocol')).toEqual(['v5.channel.k8s.io']);
    expect(JSON.stringify(s.raw)).not.toMatch(/caller-secret|Y2FsbGVyLXNlY3JldA/);
  });

  it('never passes bytes the client sent behind a request the upstream refused', async () => {
    pipelined.length = 0;
    const smuggled = 'GET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: upstream\r\n\r\n';
    const { text } = await rawUpgrade(smuggled, { 'x-test-upstream': 'pipelining' });
    expect(text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(text.endsWith('{"kind":"Status","message":"refused"}')).toBe(true);
    // The client's socket closing means the gateway has dropped the upstream connection: nothing more can come.
    expect(pipelined).toEqual(['GET /api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true HTTP/1.1']);
  });

  it('ends the tunnel as soon as a refusal is complete, chunked (above) or sized', async () => {
    const t0 = Date.now();
    const { text } = await rawUpgrade('', {}, '/refuse-sized');
    // Well before the upstream's 5s keep-alive would have closed the connection for us.
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(text).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(text.endsWith('{"kind":"Status","message":"sized"}')).toBe(true);
  });

  it('answers a Status over HTTP/1.1 when the upstream is down', async () => {
    const { text } = await rawUpgrade('', { 'x-test-upstream': 'down' });
    expect(text).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(text).toContain('Audit-Id: audit-gw\r\n');
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    expect(body).toMatchObject({ reason: 'ServiceUnavailable', code: 503, message: `the control plane "control-plane" (https://127.0.0.1:${downPort}) is unavailable: connect ECONNREFUSED 127.0.0.1:${downPort}` });
  });
});

async function until(pred: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 10));
  }
}
