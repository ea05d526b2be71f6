// exec, attach and port-forward: HTTP/1.1 Upgrade requests (WebSocket or SPDY) tunnelled raw to the upstream.
// The gateway opens its own connection with its credentials, sends the request with the caller's identity as
// Impersonate-*, relays the upstream's answer unchanged and, once the upstream has switched protocols, pipes
// bytes both ways without looking at them.
//
// Nothing the client sends after its request head is passed on until the upstream has answered 101: the
// connection is authenticated as the gateway (its client certificate), so bytes smuggled behind a request the
// upstream refuses would otherwise be read as a second request with the gateway's own rights.

import { STATUS_CODES } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { newBadRequest, statusBody, toStatus, type Status } from '../api/status.js';
import type { UserInfo } from '../api/user.js';
import type { Upstream } from './client.js';
import { UpstreamDeadline, upstreamFailure } from './errors.js';
import { upstreamPath } from './forward.js';
import { requestHeaders } from './headers.js';

export interface UpgradeOptions {
  /** How long the upstream may take to answer the upgrade request (default 30s). */
  handshakeTimeoutMs?: number;
  /** Path and query to request instead of the client's (e.g. after a /clusters/<name> prefix is stripped). */
  path?: string;
}

/** Upstream response heads larger than this are not HTTP we want to relay. */
const MAX_HEAD_BYTES = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');

export function forwardUpgrade(
  up: Upstream,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  auditID: string,
  impersonate: UserInfo,
  opts: UpgradeOptions = {},
): void {
  // Hold the client's bytes until the upstream has switched protocols (see the file comment).
  socket.pause();
  setNoDelay(socket);

  let requestHead: Buffer;
  try {
    const headers = requestHeaders(up, req, { auditID, impersonate, keepContentLength: true, upgrade: true });
    requestHead = buildRequestHead(up, req.method ?? 'GET', opts.path ?? req.url ?? '/', headers);
  } catch (e) {
    // An identity or request line that cannot be sent faithfully: nothing went upstream.
    writeStatus(socket, auditID, toStatus(e));
    return;
  }

  const c = up.connect;
  const upstream: Socket = c.tls
    ? tlsConnect({
        ...c.options,
        secureContext: c.secureContext(),
        host: c.host,
        port: c.port,
        // SNI is for names only; an IP is verified against the certificate's IP SANs without it.
        servername: c.options.servername ?? (isIP(c.host) ? undefined : c.host),
        ALPNProtocols: ['http/1.1'],
      })
    : netConnect({ host: c.host, port: c.port });
  up.tunnels.add(upstream);
  setNoDelay(upstream);

  let phase: 'connect' | 'response' = 'connect';
  let headDone = false; // the upstream's response head went to the client
  let failed = false; // a Status went to the client instead
  let upstreamFinished = false; // the upstream's side ended cleanly (or we finished with it on purpose)
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const ms = opts.handshakeTimeoutMs ?? 30_000;
  const timer = setTimeout(() => fail(new UpstreamDeadline(ms)), ms);

  // Before the response head: answer with a Status. After it: the stream is simply cut.
  const fail = (err: unknown) => {
    clearTimeout(timer);
    if (headDone) {
      socket.destroy();
      upstream.destroy();
      return;
    }
    if (failed) return;
    failed = true;
    upstreamFinished = true;
    upstream.destroy();
    writeStatus(socket, auditID, statusOf(up, err, phase));
  };

  upstream.once(c.tls ? 'secureConnect' : 'connect', () => {
    phase = 'response';
    upstream.write(requestHead);
  });
  upstream.on('error', fail);
  upstream.on('end', () => {
    upstreamFinished = true;
  });
  upstream.on('close', () => {
    up.tunnels.delete(upstream);
    if (!headDone) fail(Object.assign(new Error('the connection closed before a response'), { code: 'UND_ERR_SOCKET' }));
    // A clean end was already passed on (pipe or relay end the client side, which flushes first).
    else if (!upstreamFinished) socket.destroy();
  });
  socket.on('error', () => {
    socket.destroy();
    upstream.destroy();
  });
  socket.on('close', () => {
    clearTimeout(timer);
    upstream.destroy();
  });

  const onHeadData = (chunk: Buffer) => {
    pending.push(chunk);
    pendingBytes += chunk.length;
    const buf = pending.length === 1 ? chunk : Buffer.concat(pending, pendingBytes);
    const end = buf.indexOf(HEAD_END);
    if (end < 0) {
      if (pendingBytes > MAX_HEAD_BYTES) fail(new Error('the upgrade response head is too large'));
      else pending = [buf];
      return;
    }
    upstream.off('data', onHeadData);
    pending = [];
    const headBytes = buf.subarray(0, end + HEAD_END.length);
    const rest = buf.subarray(end + HEAD_END.length);
    const status = parseStatus(headBytes);
    if (status === null) return fail(new Error('malformed HTTP response to the upgrade request'));
    clearTimeout(timer);
    headDone = true;
    socket.write(headBytes);
    if (status === 101) switched(rest);
    else refused(headBytes, rest);
  };
  upstream.on('data', onHeadData);

  // 101: the tunnel is open. Early client bytes go first, then both directions flow untouched; each side's end
  // is passed on by pipe.
  const switched = (rest: Buffer) => {
    if (rest.length > 0) socket.write(rest);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  };

  // Anything else: relay the upstream's answer and nothing from the client; then the tunnel is done. The end of
  // the answer is found from Content-Length or the chunked framing; failing both, the upstream's close.
  const refused = (headBytes: Buffer, rest: Buffer) => {
    const length = contentLength(headBytes);
    const chunked = length === undefined && isChunked(headBytes) ? newChunkedScan() : null;
    let remaining = length ?? Infinity;
    const relay = (chunk: Buffer) => {
      let part = chunk;
      if (chunked !== null) {
        const end = scanChunked(chunked, chunk);
        if (end >= 0) {
          part = chunk.subarray(0, end);
          remaining = 0;
        }
      } else if (chunk.length > remaining) {
        part = chunk.subarray(0, remaining);
      }
      if (part.length > 0) socket.write(part);
      if (chunked === null) remaining -= part.length;
      if (remaining <= 0) done();
    };
    const done = () => {
      upstream.off('data', relay);
      upstreamFinished = true;
      socket.end();
      upstream.destroy();
    };
    upstream.on('end', () => socket.end());
    if (remaining === 0) return done();
    if (rest.length > 0) relay(rest);
    if (remaining > 0) upstream.on('data', relay);
  };
}

function buildRequestHead(up: Upstream, method: string, path: string, headers: string[]): Buffer {
  const target = upstreamPath(up, path);
  if (/\s/.test(target) || !/^[A-Z]+$/.test(method)) throw newBadRequest('invalid request line');
  let s = `${method} ${target} HTTP/1.1\r\nhost: ${up.url.host}\r\n`;
  for (let i = 0; i < headers.length; i += 2) {
    const v = headers[i + 1]!;
    if (/[\r\n\0]/.test(v)) throw newBadRequest(`invalid ${headers[i]} header value`);
    s += `${headers[i]}: ${v}\r\n`;
  }
  s += '\r\n';
  // Header strings carry bytes as latin1 characters (see headers.ts); write them back as those bytes.
  return Buffer.from(s, 'latin1');
}

function parseStatus(head: Buffer): number | null {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, 16).toString('latin1'));
  return m ? Number(m[1]) : null;
}

function contentLength(head: Buffer): number | undefined {
  const m = /\r\ncontent-length:[ \t]*(\d+)[ \t]*\r\n/i.exec(head.toString('latin1'));
  return m ? Number(m[1]) : undefined;
}

function isChunked(head: Buffer): boolean {
  return /\r\ntransfer-encoding:[^\r]*\bchunked\b/i.test(head.toString('latin1'));
}

/** Where we are in a chunked body (RFC 9112 §7.1): a size line, its data and CRLF, ..., a 0 size, trailers. */
interface ChunkedScan {
  state: 'size' | 'ext' | 'sizeLF' | 'data' | 'dataCR' | 'dataLF' | 'lineStart' | 'trailer' | 'endLF';
  size: number;
}

function newChunkedScan(): ChunkedScan {
  return { state: 'size', size: 0 };
}

/** Feeds buf to the scan; returns the offset just past the body's end, or -1 when it has not ended yet. */
function scanChunked(st: ChunkedScan, buf: Buffer): number {
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    switch (st.state) {
      case 'size': {
        const d = hexDigit(c);
        if (d >= 0) st.size = st.size * 16 + d;
        else if (c === 0x0d) st.state = 'sizeLF';
        else st.state = 'ext'; // chunk extensions (or junk) up to the line end
        break;
      }
      case 'ext':
        if (c === 0x0d) st.state = 'sizeLF';
        break;
      case 'sizeLF':
        if (st.size === 0) st.state = 'lineStart';
        else st.state = 'data';
        break;
      case 'data': {
        const take = Math.min(st.size, buf.length - i);
        st.size -= take;
        i += take - 1;
        if (st.size === 0) st.state = 'dataCR';
        break;
      }
      case 'dataCR':
        st.state = 'dataLF';
        break;
      case 'dataLF':
        st.state = 'size';
        st.size = 0;
        break;
      case 'lineStart': // after the last chunk: an empty line ends the body, anything else is a trailer field
        st.state = c === 0x0d ? 'endLF' : 'trailer';
        break;
      case 'trailer':
        if (c === 0x0a) st.state = 'lineStart';
        break;
      case 'endLF':
        if (c === 0x0a) return i + 1;
        st.state = 'trailer';
        break;
    }
  }
  return -1;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

function statusOf(up: Upstream, err: unknown, phase: 'connect' | 'response'): Status {
  return upstreamFailure(up, err, phase).status;
}

/** A Status as a complete HTTP/1.1 response on a raw socket, then close: the upgrade did not happen. */
export function writeStatus(socket: Duplex, auditID: string, s: Status): void {
  if (socket.destroyed) return;
  const body = Buffer.from(statusBody(s), 'utf8');
  const head =
    `HTTP/1.1 ${s.code} ${STATUS_CODES[s.code] ?? ''}\r\n` +
    'Audit-Id: ' + auditID + '\r\n' +
    'Cache-Control: no-cache, private\r\n' +
    'Content-Type: application/json\r\n' +
    'X-Content-Type-Options: nosniff\r\n' +
    `Date: ${new Date().toUTCString()}\r\n` +
    `Content-Length: ${body.length}\r\n` +
    'Connection: close\r\n\r\n';
  socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
}

function setNoDelay(s: Duplex): void {
  // Interactive exec sends keystrokes one by one; Nagle would hold each for the previous one's ACK.
  const sock = s as Partial<Socket>;
  if (typeof sock.setNoDelay === 'function') sock.setNoDelay(true);
}
