// The HTTPS listener: TLS 1.2+ with HTTP/2 and HTTP/1.1 (ALPN; upgrades need 1.1), client certificates asked for
// but judged by the authentication step (so a bad one is a 401 Status, not a handshake failure), every request
// handed to the chain, upgrades (exec, attach, port-forward) through the same chain, and a graceful shutdown that
// stops accepting, lets in-flight requests finish and ends watches cleanly.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ServerHttp2Session } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import fastify from 'fastify';
import type { Logger } from 'pino';
import { newBadRequest, toStatus, type Status } from '../api/status.js';
import type { Config } from '../config/index.js';
import { captureUpgrade } from '../audit/capture.js';
import { longRunningGauge, observeRequest, reportedVerb } from '../metrics/apiserver.js';
import { writeStatus as writeUpgradeStatus } from '../upstream/upgrade.js';
import { UpgradeResponse } from './websocket.js';
import { buildChain } from './chain.js';
import type { Request, RequestContext, Response } from './context.js';
import type { RequestInfo } from '../request/requestinfo.js';
import type { UserInfo } from '../api/user.js';
import { newGateway, type Gateway } from './gateway.js';
import { writeStatus } from './respond.js';
import { loadTLSFiles } from './tlsreload.js';

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  port: number;
  /** Graceful: stop accepting, end watches, wait up to the grace period for the rest, then close. */
  close(): Promise<void>;
}

const AUDIT_ID = /^[\x21-\x7e]{1,128}$/;

export async function startGateway(config: Config, log: Logger): Promise<RunningGateway> {
  const g = await newGateway(config, log);
  const chain = buildChain(g);
  const tls = config.server.tls;
  const tlsFiles = await loadTLSFiles(tls, log, g.metrics.registry);
  const app = fastify({
    http2: true,
    https: {
      allowHTTP1: true,
      settings: { maxConcurrentStreams: config.server.http2MaxStreamsPerConnection },
      ...tlsFiles.options,
      ...(tls.clientCAFile ? { requestCert: true, rejectUnauthorized: false } : {}),
    },
    logger: false,
    // The chain reads bodies itself (src/request/body.ts) and enforces the limit with a Status.
    bodyLimit: Number.MAX_SAFE_INTEGER,
    return503OnClosing: true,
    keepAliveTimeout: 120_000,
    frameworkErrors: (err: Error, req: { raw: Request }, reply: { hijack(): void; raw: Response }) => {
      reply.hijack();
      writeStatus(reply.raw, auditIDOf(req.raw), newBadRequest(err.message).status);
    },
  } as any);
  if (tls.clientCAFile) allowPartialTrustChain(app.server);
  // Leave bodies unread: forwarded requests stream them, the steps that need them read them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));

  const longRunning = new Set<Response>();
  const handle = async (req: Request, res: Response): Promise<void> => {
    const started = process.hrtime.bigint();
    const auditID = auditIDOf(req);
    res.setHeader('Audit-Id', auditID);
    const ctx = newRequestContext(log, req, res, auditID);
    let counted = false;
    const account = () => {
      if (counted || !ctx.info) return;
      counted = true;
      const verb = verbOf(ctx);
      const dryRun = ctx.url.search !== '' && ctx.url.searchParams.getAll('dryRun').includes('All');
      const longRunningRequest = ctx.info.longRunning;
      if (!ctx.refusedByFilter) observeRequest(g.metrics, ctx.info, verb, dryRun, res.statusCode, longRunningRequest || ctx.droppedByFlowControl ? undefined : Number(process.hrtime.bigint() - started) / 1e9, ctx.queueWaitSeconds);
      // Counted once its answer started (withLongRunningTracking): one that ended before that was never counted.
      if (longRunningRequest && longRunning.delete(res)) longRunningGauge(g.metrics, ctx.info, verb).dec();
      if (log.isLevelEnabled('debug')) ctx.log.debug({ verb, path: ctx.url.pathname, code: res.statusCode }, 'request');
    };
    res.once('close', account);
    try {
      await chain(withLongRunningTracking(ctx, g, longRunning));
    } catch (e) {
      const s = toStatus(e);
      if (s.code >= 500) ctx.log.warn({ code: s.code, reason: s.reason, msg: s.message }, 'request failed');
      writeStatus(res, auditID, s);
    } finally {
      // A request refused before its request info (a malformed path) is not counted.
      if (!ctx.info) counted = true;
    }
  };

  // Every path and method goes to the chain; routing there decides (fastify's router would only duplicate it).
  for (const url of ['/', '/*']) {
    app.route({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      url,
      handler: (request, reply) => {
        reply.hijack();
        return handle(request.raw, reply.raw);
      },
    });
  }

  // HTTP/1.1 upgrades (exec, attach, port-forward over WebSocket or SPDY) take the same chain up to routing,
  // then become a raw tunnel to the control plane.
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const auditID = auditIDOf(req);
    upgrade(g, chain, log, req, socket, head, auditID).catch((e) => writeUpgradeStatus(socket, auditID, toStatus(e) as Status));
  });

  // Connections are tracked so that shutdown can send GOAWAY and, after the grace period, cut what is left.
  const sessions = new Set<ServerHttp2Session>();
  const sockets = new Set<TLSSocket>();
  app.server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  g.authenticator.setClientCAs(tlsFiles.clientCAs, listenerContext(app.server));
  const handshakeErrors = g.metrics.tlsHandshakeErrors.labels();
  app.server.on('tlsClientError', () => handshakeErrors.inc());
  app.server.on('secureConnection', (socket: TLSSocket) => {
    g.authenticator.connectionAccepted(socket, connectionContext(socket));
    // The HTTP/2 server leaves Nagle's algorithm on; small responses then wait for the peer's delayed ACK (~40 ms).
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  await app.listen({ host: config.server.address, port: config.server.port });
  // The authenticator checks client certificates against the bundle the listener has, also on connections made
  // before a reload: both are set in the same turn.
  const tlsWatch = tlsFiles.watch((o, clientCAs) => {
    (app.server as unknown as { setSecureContext(o: unknown): void }).setSecureContext(o);
    if (tls.clientCAFile) allowPartialTrustChain(app.server);
    g.authenticator.setClientCAs(clientCAs, listenerContext(app.server));
  });
  const port = (app.server.address() as AddressInfo).port;
  const host = config.server.address === '0.0.0.0' || config.server.address === '::' ? '127.0.0.1' : config.server.address;
  log.info({ port, address: config.server.address }, 'fleetgate is serving');

  let closing: Promise<void> | undefined;
  return {
    gateway: g,
    url: `https://${host}:${port}`,
    port,
    close() {
      closing ??= (async () => {
        g.shuttingDown = true;
        tlsWatch.close();
        // HTTP/2 clients are told (GOAWAY) to open new connections elsewhere; streams under way may finish.
        for (const session of sessions) session.close();
        // Watches and other streams never finish by themselves: end them cleanly so clients re-watch elsewhere.
        for (const res of longRunning) res.end();
        for (const w of g.watches) w.stop();
        const closed = app.close();
        const grace = new Promise<void>((r) => setTimeout(r, config.server.shutdownGracePeriodSeconds * 1000).unref());
        await Promise.race([closed, grace]);
        // What is left after the grace period (idle keep-alive connections, stuck requests) is cut.
        for (const socket of sockets) socket.destroy();
        await g.close();
      })();
      return closing;
    },
  };
}

/** The verb the request metrics name a request by (once request info is known). */
function verbOf(ctx: RequestContext): string {
  return reportedVerb(ctx.info, ctx.req.method ?? 'GET', ctx.req.headers['content-type']);
}

/**
 * The secure context the listener gives new connections (Node's tls.Server keeps it as _sharedCreds, and each
 * connection's handle keeps the one it was made with as _secureContext): which client CA bundle verified a handshake.
 */
function listenerContext(server: unknown): object | undefined {
  return (server as { _sharedCreds?: object })._sharedCreds;
}

/**
 * Every certificate of the client CA bundle a trust anchor, as in Go's Roots pool (tlsreload.ts asks for it in its
 * options): Node's tls.Server builds its context from a fixed list of options that leaves allowPartialTrustChain
 * out, so the flag is set on the context itself, in the same turn as the context is made (before any handshake).
 */
function allowPartialTrustChain(server: unknown): void {
  const context = (server as { _sharedCreds?: { context?: { setAllowPartialTrustChain?: () => void } } })._sharedCreds?.context;
  if (typeof context?.setAllowPartialTrustChain !== 'function') {
    throw new Error('this Node.js cannot trust an intermediate CA of server.tls.clientCAFile without its root (needs Node.js 20.18 or later)');
  }
  context.setAllowPartialTrustChain();
}

function connectionContext(socket: TLSSocket): object | undefined {
  return (socket as unknown as { ssl?: { _secureContext?: object } }).ssl?._secureContext;
}

function auditIDOf(req: { headers: Record<string, string | string[] | undefined> }): string {
  const v = req.headers['audit-id'];
  return typeof v === 'string' && AUDIT_ID.test(v) ? v : randomUUID();
}

function withLongRunningTracking(ctx: RequestContext, g: Gateway, set: Set<Response>): RequestContext {
  // RequestInfo is known only after the first step; record long-running requests once it is.
  const res = ctx.res;
  const origWriteHead = res.writeHead.bind(res) as (...a: any[]) => any;
  (res as any).writeHead = (...args: any[]) => {
    if (ctx.info?.longRunning && !ctx.refusedByFilter && !set.has(res)) {
      set.add(res);
      longRunningGauge(g.metrics, ctx.info, verbOf(ctx)).inc();
    }
    return origWriteHead(...args);
  };
  return ctx;
}

/**
 * An upgraded request in apiserver_request_total (exec, attach and port-forward as CONNECT, a WebSocket watch as
 * WATCH), counted when the connection closes, and in apiserver_longrunning_requests while an upgraded one is open, as
 * kube-apiserver counts them. Whoever answers (this gateway, or the upstream through a tunnel), the code is read off
 * the first bytes written to the client. An upgrade that happened is code "0": kube-apiserver writes its 101 on the
 * hijacked connection, past the response writer its metrics watch (a WebSocket watch of a real kube-apiserver v1.34.4,
 * closed by its client, is apiserver_request_total{verb="WATCH",code="0"}); an answer that refused the upgrade goes
 * through that writer and keeps its code.
 */
function countUpgrade(g: Gateway, ctx: RequestContext, socket: Duplex): void {
  let code = 0;
  let open: ReturnType<typeof longRunningGauge> | undefined;
  captureUpgrade(socket, (c) => {
    code = c;
    if (c === 101 && ctx.info?.longRunning && !socket.destroyed) {
      open = longRunningGauge(g.metrics, ctx.info, verbOf(ctx));
      open.inc();
    }
  });
  socket.once('close', () => {
    open?.dec();
    // No answer at all (the client left first), a request refused before its request info, or by authentication or
    // authorization: not counted, as on the HTTP path.
    if (code === 0 || !ctx.info || ctx.refusedByFilter) return;
    observeRequest(g.metrics, ctx.info, verbOf(ctx), false, code === 101 ? 0 : code, undefined);
  });
}

/** An upgrade goes through the same chain; routing turns it into a tunnel (ctx.upgrade). */
async function upgrade(g: Gateway, chain: (ctx: RequestContext) => Promise<void>, log: Logger, req: IncomingMessage, socket: Duplex, head: Buffer, auditID: string): Promise<void> {
  // Steps that answer an upgrade themselves (flow control's 429, a watch of the merged cache) write to this; tunnels
  // leave it alone and the upstream answers.
  const res = new UpgradeResponse(req, socket, head, auditID);
  const ctx = newRequestContext(log, req, res as unknown as Response, auditID);
  ctx.upgrade = { socket, head };
  countUpgrade(g, ctx, socket);
  try {
    await chain(ctx);
  } catch (e) {
    // An error once the WebSocket is open cannot be an HTTP answer any more: the connection is closed instead.
    if (res.headersSent) {
      socket.destroy();
      return;
    }
    throw e;
  }
}

/**
 * A request's context. Its logger (bound to the Audit-ID, and to the user once authentication has named one) is
 * made when something first logs: a pino child costs more than a whole chain step, and most requests never log.
 */
export function newRequestContext(log: Logger, req: Request, res: Response, auditID: string): RequestContext {
  return new Context(log, req, res, auditID);
}

// A class, not an object literal with its own get/set log: each literal's accessor pair made a hidden class per
// request, allocated where V8 keeps long-lived objects, and through it the request's whole graph outlived every
// young-generation collection until the next full one.
class Context implements RequestContext {
  url: URL;
  info = undefined as unknown as RequestInfo;
  user?: UserInfo = undefined;
  impersonator?: UserInfo = undefined;
  cluster?: string = undefined;
  deadline?: number = undefined;
  body?: Buffer = undefined;
  allowedClusters?: (cluster: string) => boolean = undefined;
  upgrade?: { socket: Duplex; head: Buffer } = undefined;
  refusedByFilter?: boolean = undefined;
  droppedByFlowControl?: boolean = undefined;
  queueWaitSeconds?: number = undefined;
  #base: Logger;
  #logger: Logger | undefined = undefined;
  #named = false; // #logger carries the user

  constructor(base: Logger, readonly req: Request, readonly res: Response, readonly auditID: string) {
    this.#base = base;
    this.url = new URL(req.url ?? '/', 'https://gateway.invalid');
  }

  get log(): Logger {
    if (this.#logger === undefined || (!this.#named && this.user !== undefined)) {
      this.#named = this.user !== undefined;
      this.#logger = this.#base.child(this.#named ? { auditID: this.auditID, user: this.user!.username } : { auditID: this.auditID });
    }
    return this.#logger;
  }

  set log(l: Logger) {
    this.#logger = l;
    this.#named = true;
  }
}
