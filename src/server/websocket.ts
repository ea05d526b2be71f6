// The response of an HTTP/1.1 upgrade request, for the steps that answer one themselves. A watch of the merged cache
// asked for over WebSocket is served as kube-apiserver serves any watch to such a client (watchServer.HandleWS):
// each event is one text message, its JSON and newline, and the connection is closed when the watch ends. Browser
// dashboards watch this way, since a browser cannot read a streamed response as it arrives on every API, nor set an
// Authorization header (their token comes as a WebSocket subprotocol; src/authn/bearer.ts).
//
// The watch writes to what looks like its HTTP response (src/cache/watch.ts); the handshake is made when it writes
// its 200 head, so anything answered before that (flow control's 429, a bad selector's 400) is an ordinary HTTP
// answer on the socket, as kube-apiserver's is. Upgrades that are tunnelled (exec, attach, port-forward, forwarded
// watches) never write to it: the upstream answers them.

import { EventEmitter } from 'node:events';
import { STATUS_CODES, validateHeaderName, validateHeaderValue, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { BEARER_PROTOCOL_PREFIX } from '../upstream/headers.js';

/** The largest message a watch's client may send (it is read and dropped); larger closes the connection (1009). */
const MAX_CLIENT_MESSAGE_BYTES = 64 * 1024;

/** Bytes a watcher's WebSocket may have queued before writes answer false (the watch then waits, or ends a live one). */
const HIGH_WATER_MARK = 1024 * 1024;

// One server, no listener of its own: it only makes handshakes. Per-message compression is off, as kube's server has
// none; a subprotocol the client offers other than its bearer token is taken back, as kube's handshake does.
const server = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  // A watch reads nothing from its client: a message (ws buffers one whole before it is dropped) is kept small, where
  // ws's default would let each connection hold 100 MiB.
  maxPayload: MAX_CLIENT_MESSAGE_BYTES,
  handleProtocols: (protocols) => {
    for (const p of protocols) if (!p.startsWith(BEARER_PROTOCOL_PREFIX)) return p;
    return false;
  },
});
const extraHeaders = new WeakMap<IncomingMessage, string[]>();
server.on('headers', (headers: string[], req: IncomingMessage) => {
  const extra = extraHeaders.get(req);
  if (extra) headers.push(...extra);
});

/** An HTTP token (RFC 9110 tchar), what each subprotocol must be. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Why the request is not a WebSocket handshake ws would complete (RFC 6455, as ws checks it), or undefined. Checked
 * before a watch is served on it, so that the client gets a Status, not ws's bare 400.
 */
export function notWebSocketHandshake(req: IncomingMessage): string | undefined {
  const upgrade = req.headers.upgrade;
  if (typeof upgrade !== 'string' || upgrade.toLowerCase() !== 'websocket') return `only a WebSocket upgrade serves a watch of pods or events across the fleet (Upgrade: ${JSON.stringify(upgrade ?? '')}); send the watch without the Upgrade header`;
  if (req.method !== 'GET') return 'a WebSocket handshake is a GET';
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string' || !/^[+/0-9A-Za-z]{22}==$/.test(key.trim())) return 'missing or invalid Sec-WebSocket-Key header';
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return 'missing or unsupported Sec-WebSocket-Version header (13)';
  const protocols = req.headers['sec-websocket-protocol'];
  if (protocols !== undefined) {
    const list = String(protocols).split(',').map((p) => p.trim());
    if (list.some((p) => !TOKEN.test(p)) || new Set(list).size !== list.length) return 'invalid Sec-WebSocket-Protocol header: a comma-separated list of distinct tokens';
  }
  return undefined;
}

/** An upgrade request's response: a WebSocket once a 200 head is written, else a plain HTTP answer. */
export class UpgradeResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  private ws: WebSocket | undefined;
  private readonly headers = new Map<string, string | string[]>();
  private waitingForDrain = false;
  private closed = false;
  /** The code of a head that was not a handshake. */
  private answer: number | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly socket: Duplex,
    private readonly head: Buffer,
    auditID: string,
  ) {
    super();
    this.headers.set('Audit-Id', auditID);
    socket.once('close', () => this.onClose());
  }

  get destroyed(): boolean {
    return this.closed || this.socket.destroyed;
  }

  get writableLength(): number {
    return this.ws?.bufferedAmount ?? 0;
  }

  /** As Node's: a name or value that would break the head (a CR or LF in a member's error text) throws. */
  setHeader(name: string, value: string | string[]): this {
    validateHeaderName(name);
    for (const v of Array.isArray(value) ? value : [value]) validateHeaderValue(name, v);
    this.headers.set(name, value);
    return this;
  }

  getHeader(name: string): string | string[] | undefined {
    return this.headers.get(name);
  }

  /**
   * 200 makes the handshake; the watch's own headers (content type, caching) describe a stream a WebSocket is not, and
   * are left out of it. Any other code is an HTTP answer, its body written by end().
   */
  writeHead(code: number, headers?: Record<string, string | string[]>): this {
    if (this.headersSent) return this;
    this.headersSent = true;
    this.statusCode = code;
    if (code !== 200) {
      for (const [name, value] of Object.entries(headers ?? {})) this.setHeader(name, value);
      this.answer = code;
      return this;
    }
    const extra: string[] = [];
    for (const [name, value] of this.headers) for (const v of Array.isArray(value) ? value : [value]) extra.push(`${name}: ${v}`);
    extraHeaders.set(this.req, extra);
    // Synchronous unless the request is not a WebSocket handshake, which ws then answers with a 400 and closes.
    server.handleUpgrade(this.req, this.socket, this.head, (ws) => {
      this.ws = ws;
      ws.on('close', () => this.onClose());
      ws.on('error', () => this.onClose());
      // Messages from the client mean nothing to a watch, as to kube's.
    });
    // No WebSocket: the client went away while the chain ran (ws then only destroys the socket, whose 'close' came
    // before the watch listened), or ws refused the handshake. The watch is told (again) once it has set itself up.
    if (this.ws === undefined) {
      process.nextTick(() => {
        this.closed = true;
        this.emit('close');
      });
    }
    return this;
  }

  flushHeaders(): void {}
  cork(): void {}
  uncork(): void {}

  /** Each event (a line) as its own message; done when the last has been handed to the socket. */
  write(chunk: string | Buffer, done?: () => void): boolean {
    const ws = this.ws;
    if (ws === undefined || this.closed || ws.readyState !== ws.OPEN) return false;
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let from = 0;
    while (from < b.length) {
      const nl = b.indexOf(0x0a, from);
      const to = nl < 0 ? b.length : nl + 1;
      const last = to >= b.length;
      ws.send(b.subarray(from, to), { binary: false }, last ? this.sent(done) : undefined);
      from = to;
    }
    if (b.length === 0) done?.();
    if (ws.bufferedAmount < HIGH_WATER_MARK) return true;
    this.waitingForDrain = true;
    return false;
  }

  end(chunk?: string | Buffer): this {
    if (this.writableEnded) return this;
    if (!this.headersSent) this.writeHead(200);
    if (this.answer !== undefined) {
      this.writableEnded = true;
      this.writeAnswer(this.answer, chunk === undefined ? Buffer.alloc(0) : Buffer.from(chunk));
      return this;
    }
    if (chunk !== undefined) this.write(chunk);
    this.writableEnded = true;
    // A normal closure once what was sent has gone, as kube's handler returning closes its connection.
    if (this.ws && this.ws.readyState === this.ws.OPEN) this.ws.close(1000);
    else if (!this.ws) this.socket.destroy();
    return this;
  }

  /** A complete HTTP/1.1 response, then close: the upgrade did not happen. */
  private writeAnswer(code: number, body: Buffer): void {
    if (this.socket.destroyed) return;
    let head = `HTTP/1.1 ${code} ${STATUS_CODES[code] ?? ''}\r\n`;
    for (const [name, value] of this.headers) {
      const lower = name.toLowerCase();
      if (lower === 'content-length' || lower === 'connection' || lower === 'transfer-encoding') continue;
      for (const v of Array.isArray(value) ? value : [value]) head += `${name}: ${v}\r\n`;
    }
    head += `Date: ${new Date().toUTCString()}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    this.socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  }

  private sent(done?: () => void): () => void {
    return () => {
      done?.();
      if (this.waitingForDrain && (this.ws?.bufferedAmount ?? 0) < HIGH_WATER_MARK / 2) {
        this.waitingForDrain = false;
        this.emit('drain');
      }
    };
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }
}
