// A connection to one upstream kube-apiserver (the federation control plane, later each member cluster): where it
// is, the gateway's own credentials for it, and a pool of keep-alive connections. Requests borrow the pool;
// upgrade tunnels (exec, attach, port-forward) dial their own connection with the same TLS options, because a
// hijacked socket can never go back to a pool.

import { readFileSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { createSecureContext, type ConnectionOptions, type SecureContext } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { buildConnector, Pool, type Dispatcher } from 'undici';
import { goQuote } from '../api/status.js';
import { CIPHERS } from '../pki/ciphers.js';

export interface Upstream {
  name: string;
  /** What the upstream is to the gateway, for messages: "control plane", "member cluster". */
  role: string;
  url: URL;
  dispatcher: Dispatcher;
  /** `Bearer <token>` when the gateway authenticates with a token rather than (or as well as) a client cert. */
  authHeader?: string;
  /** What a raw connection to the upstream needs (host, port, servername, CA, client cert/key, verification). */
  connect: UpstreamConnect;
  /** Open upgrade tunnels, destroyed by close(). */
  tunnels: Set<Duplex>;
  /**
   * Longest wait for one request that is not long-running (controlPlane.timeoutSeconds): forwarded requests get
   * the smaller of it and what is left of the caller's deadline; the gateway's own requests get it.
   */
  requestTimeoutMs?: number;
  /**
   * Stops the upstream: open tunnels and in-flight requests (watches, log follows) are cut, because a graceful
   * close would wait forever on streams that never end by themselves.
   */
  close(): Promise<void>;
}

export interface UpstreamConnect {
  /** false for http:// upstreams (tests only). */
  tls: boolean;
  host: string;
  port: number;
  options: ConnectionOptions;
  /** The TLS context of options, built once (tunnels use it too). */
  secureContext(): SecureContext;
}

export interface EndpointSpec {
  name: string;
  url: string;
  /** Default "control plane". */
  role?: string;
  caPem?: string;
  certPem?: string;
  keyPem?: string;
  token?: string;
  insecure?: boolean;
  /** TLS server name to verify when it differs from the URL host (kubeconfig tls-server-name). */
  serverName?: string;
}

// kube-apiserver keeps idle HTTP/1.1 connections for 90s (its http.Server IdleTimeout); we give ours up well
// before that so we never write a request onto a connection the server is closing.
const KEEP_ALIVE_MS = 30_000;
const KEEP_ALIVE_MAX_MS = 60_000;
// A stalled upstream must not hold a request forever even when no deadline was asked for; kube-apiserver itself
// answers a long-running request's headers at once, so five minutes only ever trips on a dead peer.
const HEADERS_TIMEOUT_MS = 300_000;

export function upstreamFromEndpoint(ep: EndpointSpec): Upstream {
  let url: URL;
  try {
    url = new URL(ep.url);
  } catch {
    throw new Error(`upstream ${ep.name}: invalid server URL ${JSON.stringify(ep.url)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new Error(`upstream ${ep.name}: server URL must be https:// (got ${url.protocol}//)`);
  }
  if ((ep.certPem === undefined) !== (ep.keyPem === undefined)) {
    throw new Error(`upstream ${ep.name}: a client certificate needs its key and a key its certificate`);
  }
  // A server URL with a path prefix (https://host/k8s/) is valid in a kubeconfig; requests are joined onto it.
  const isTLS = url.protocol === 'https:';
  const port = url.port ? Number(url.port) : isTLS ? 443 : 80;
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const options: ConnectionOptions = {
    ca: ep.caPem,
    cert: ep.certPem,
    key: ep.keyPem,
    rejectUnauthorized: !ep.insecure,
  };
  if (ep.serverName) options.servername = ep.serverName;

  // One TLS context for every connection, built at the first: from ca, cert and key each new connection would parse
  // them again (milliseconds each; a cold sync of 100 members opens hundreds).
  let context: SecureContext | undefined;
  const secureContext = () => (context ??= createSecureContext({ ca: ep.caPem, cert: ep.certPem, key: ep.keyPem, ciphers: CIPHERS }));
  let connector: buildConnector.connector | undefined;
  const dispatcher = new Pool(url.origin, {
    connect: (opts, callback) => {
      try {
        connector ??= buildConnector({ ...options, ...(isTLS ? { secureContext: secureContext() } : {}), ALPNProtocols: ['http/1.1'] });
      } catch (e) {
        return void callback(e as Error, null);
      }
      connector(opts, callback);
    },
    // Watches and log follows each hold a connection for their whole life; a cap would queue everything behind
    // them, so the pool grows as needed and idle connections age out.
    connections: null,
    pipelining: 1,
    keepAliveTimeout: KEEP_ALIVE_MS,
    keepAliveMaxTimeout: KEEP_ALIVE_MAX_MS,
    headersTimeout: HEADERS_TIMEOUT_MS,
    // Watch and log streams may be silent for long stretches; deadlines for ordinary requests are the caller's.
    bodyTimeout: 0,
  });
  const tunnels = new Set<Duplex>();
  const up: Upstream = {
    name: ep.name,
    role: ep.role ?? 'control plane',
    url,
    dispatcher,
    connect: { tls: isTLS, host, port, options, secureContext },
    tunnels,
    async close() {
      for (const s of tunnels) s.destroy();
      tunnels.clear();
      await dispatcher.destroy();
    },
  };
  if (ep.token) up.authHeader = `Bearer ${ep.token}`;
  return up;
}

/**
 * The upstream a kubeconfig describes (its current context, or `context`): server, CA (data or file),
 * tls-server-name, insecure-skip-tls-verify, and a client certificate and/or a token. Credential plugins (exec,
 * auth-provider) and proxies are refused: the gateway has to hold a credential it can use without running code.
 */
export function upstreamFromKubeconfig(path: string, context?: string, name?: string): Upstream {
  return upstreamFromEndpoint(endpointFromKubeconfig(path, context, name));
}

/** What upstreamFromKubeconfig connects with, without connecting: member specs compare and fingerprint it. */
export function endpointFromKubeconfig(path: string, context?: string, name?: string): EndpointSpec {
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(path);
  } catch (e) {
    throw new Error(`kubeconfig ${path}: ${(e as Error).message}`);
  }
  if (context) {
    if (!kc.getContextObject(context)) throw new Error(`kubeconfig ${path}: no context ${JSON.stringify(context)}`);
    kc.setCurrentContext(context);
  }
  const ctxName = kc.getCurrentContext();
  if (!ctxName || !kc.getContextObject(ctxName)) throw new Error(`kubeconfig ${path}: no current context`);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`kubeconfig ${path}: context ${JSON.stringify(ctxName)} names no known cluster`);
  const user = kc.getCurrentUser();
  if (!user) throw new Error(`kubeconfig ${path}: context ${JSON.stringify(ctxName)} names no known user`);
  if (cluster.proxyUrl) throw new Error(`kubeconfig ${path}: cluster ${JSON.stringify(cluster.name)} uses proxy-url, which is not supported`);
  if (user.exec || user.authProvider) {
    throw new Error(`kubeconfig ${path}: user ${JSON.stringify(user.name)} uses a credential plugin (exec/auth-provider); give the gateway a client certificate or a token`);
  }
  if (user.username || user.password) {
    throw new Error(`kubeconfig ${path}: user ${JSON.stringify(user.name)} uses basic auth, which kube-apiserver no longer accepts`);
  }

  const read = (data: string | undefined, file: string | undefined, what: string): string | undefined => {
    if (data) return Buffer.from(data, 'base64').toString('utf8');
    if (!file) return undefined;
    try {
      return readFileSync(file, 'utf8');
    } catch (e) {
      throw new Error(`kubeconfig ${path}: cannot read ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  };
  const certPem = read(user.certData, user.certFile, 'client certificate');
  const keyPem = read(user.keyData, user.keyFile, 'client key');
  const token = user.token?.trim();
  if (!certPem && !token) {
    throw new Error(`kubeconfig ${path}: user ${JSON.stringify(user.name)} has neither a client certificate nor a token`);
  }
  return {
    name: name ?? ctxName,
    url: cluster.server,
    caPem: read(cluster.caData, cluster.caFile, 'certificate authority'),
    certPem,
    keyPem,
    token: token || undefined,
    insecure: cluster.skipTLSVerify,
    serverName: cluster.tlsServerName,
  };
}

/** How messages name an upstream: `the control plane "cp" (https://10.0.0.1:6443)`; the origin carries no credential. */
export function describeUpstream(up: Upstream): string {
  return `the ${up.role} ${goQuote(up.name)} (${up.url.origin})`;
}
