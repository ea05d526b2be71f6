// The least a Node.js hop can cost on this machine: a TLS server asking for client certificates, as the gateway's
// listener does (HTTP/2 with HTTP/1.1 allowed), that sends every request to the upstream through an undici pool
// with a fixed token and Impersonate-* headers and streams the answer back. No request info, authentication,
// audit, flow control or metrics. Scenario 1 measures it beside the gateway, so the report can say how much of the
// added time any hop written in Node pays here and how much is the gateway's own.

import { createSecureServer } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fastify from 'fastify';
import { Pool, type Dispatcher } from 'undici';
import { CIPHERS, SERVER_CIPHER_OPTIONS } from '../../../src/pki/ciphers.js';

export interface BareHop {
  url: string;
  close(): Promise<void>;
}

export interface BareHopOptions {
  upstreamUrl: string;
  upstreamCaPem: string;
  token: string;
  impersonation: Record<string, string | string[]>;
  servingCertPem: string;
  servingKeyPem: string;
  clientCaPem: string;
  /**
   * 'h2': HTTP/2 with HTTP/1.1 allowed, as the gateway listens; 'https': node:https, HTTP/1.1 only; 'fastify': the
   * h2 listener behind fastify with one hijacking route, as the gateway's server takes requests before its chain.
   */
  listener: 'h2' | 'https' | 'fastify';
}

export async function startBareHop(o: BareHopOptions): Promise<BareHop> {
  const up = new URL(o.upstreamUrl);
  const pool = new Pool(up.origin, { connections: 128, connect: { ca: o.upstreamCaPem, ciphers: CIPHERS } });
  const fixed: string[] = ['authorization', `Bearer ${o.token}`];
  for (const [k, v] of Object.entries(o.impersonation)) for (const one of Array.isArray(v) ? v : [v]) fixed.push(k, one);
  const tls = { cert: o.servingCertPem, key: o.servingKeyPem, ca: o.clientCaPem, requestCert: true, rejectUnauthorized: false, ...SERVER_CIPHER_OPTIONS };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const headers = fixed.slice();
    const accept = req.headers.accept;
    if (typeof accept === 'string') headers.push('accept', accept);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart() {},
      onResponseStart(_c, status, h) {
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(h)) if (v !== undefined && k !== 'connection' && k !== 'keep-alive' && k !== 'transfer-encoding') out[k] = v;
        res.writeHead(status, out);
      },
      onResponseData(_c, chunk) {
        res.write(chunk);
      },
      onResponseEnd() {
        res.end();
      },
      onResponseError(_c, err) {
        if (!res.headersSent) res.writeHead(502);
        res.end(String(err));
      },
    };
    pool.dispatch({ method: 'GET', path: req.url ?? '/', headers, body: null, upgrade: null }, handler);
  };
  if (o.listener === 'fastify') {
    const app = fastify({ http2: true, https: { allowHTTP1: true, ...tls }, logger: false } as any);
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_req, _payload, done) => done(null));
    app.route({
      method: ['GET'],
      url: '/*',
      handler: (request, reply) => {
        reply.hijack();
        handle(request.raw as unknown as IncomingMessage, reply.raw as unknown as ServerResponse);
      },
    });
    app.server.on('secureConnection', (s: import('node:tls').TLSSocket) => s.setNoDelay(true));
    await app.listen({ host: '127.0.0.1', port: 0 });
    return {
      url: `https://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
      async close() {
        await app.close();
        await pool.close();
      },
    };
  }
  const server = o.listener === 'h2' ? createSecureServer({ ...tls, allowHTTP1: true }, handle as any) : createHttpsServer(tls, handle);
  server.on('secureConnection', (s: import('node:tls').TLSSocket) => s.setNoDelay(true));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      await pool.close();
    },
  };
}
