// Forwarding one request to an upstream kube-apiserver with the gateway's credentials and the caller's identity
// as Impersonate-*. Bodies stream both ways unchanged (protobuf, gzip, anything), each response chunk is written
// as soon as it arrives so watches and log follows are not held back, and the upstream request is aborted when
// the client goes away.

import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { newInternalError, StatusError } from '../api/status.js';
import type { Attributes, Decision, UserInfo } from '../api/user.js';
import type { Request, Response } from '../server/context.js';
import { describeUpstream, type Upstream } from './client.js';
import { UpstreamDeadline, upstreamFailure } from './errors.js';
import { appendImpersonation, requestHeaders, responseHeaders } from './headers.js';

export { impersonationHeaders } from './headers.js';

export interface ForwardOptions {
  /** The caller, sent as Impersonate-*; absent only for requests the gateway makes as itself. */
  impersonate?: UserInfo;
  /** Deadline for non-long-running requests (whole exchange); none for watches, logs and the like. */
  timeoutMs?: number;
  /** Path and query to request instead of the client's (e.g. after a /clusters/<name> prefix is stripped). */
  path?: string;
  /** The body, when the chain has already read it (admission); otherwise the request streams through. */
  body?: Buffer;
}

/**
 * Sends the request upstream and streams the answer to res. Resolves with the status code the client got (0 when
 * the client left before any response). Rejects with a StatusError (503/504/502) only while nothing has been
 * written, so the chain can answer it; a failure after the headers went out cuts the response instead, which is
 * what a client of a real apiserver sees when a stream breaks.
 */
export function forward(up: Upstream, req: Request, response: Response, auditID: string, opts: ForwardOptions): Promise<number> {
  const res = response as ClientResponse;
  const method = req.method ?? 'GET';
  const path = upstreamPath(up, opts.path ?? req.url ?? '/');
  let body: Buffer | Request | null = null;
  let keepContentLength = false;
  if (opts.body !== undefined) body = opts.body;
  else if (hasBody(req)) {
    body = req;
    keepContentLength = true;
  }
  const headers = requestHeaders(up, req, { auditID, impersonate: opts.impersonate, keepContentLength });

  return new Promise<number>((resolve, reject) => {
    let controller: Dispatcher.DispatchController | null = null;
    let settled = false;
    let started = false; // onRequestStart: the request is on a connected socket
    let responded = false; // headers written to the client
    let status = 0;
    let timer: NodeJS.Timeout | undefined;
    let waitingDrain = false;
    let clientGone = false;
    let bodyStarted = false;
    const flushHead = () => {
      if (!bodyStarted && !settled) res.flushHeaders();
    };

    const finish = (code: number) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      res.off('close', onClientClose);
      resolve(code);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      if (responded) {
        // Too late for a Status: break the stream so the client sees it was cut short.
        res.destroy();
        finish(status);
        return;
      }
      settled = true;
      if (timer) clearTimeout(timer);
      res.off('close', onClientClose);
      if (clientGone) resolve(0);
      else reject(err instanceof StatusError ? err : upstreamFailure(up, err, started ? 'response' : 'connect'));
    };
    const onClientClose = () => {
      if (settled) return;
      clientGone = true;
      controller?.abort(new Error('client closed the connection'));
      finish(responded ? status : 0);
    };
    const resume = () => {
      waitingDrain = false;
      controller?.resume();
    };

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        started = true;
        if (settled) c.abort(new Error('request abandoned'));
      },
      onResponseStart(c, statusCode, upstreamHeaders: IncomingHttpHeaders) {
        if (settled) return c.abort(new Error('request abandoned'));
        if (statusCode < 200) return; // 1xx informational: the real answer follows
        status = statusCode;
        res.writeHead(statusCode, responseHeaders(upstreamHeaders));
        responded = true;
        // Watches answer headers long before their first event, and clients wait on them to know the watch is open:
        // they go out once this turn of the loop has no body for them. Flushing them at once cost every small answer
        // (its body is usually in the same read) a TLS record and a syscall more (0.6 s of the gateway's thread in a
        // quick scenario 1 profile).
        setImmediate(flushHead);
      },
      onResponseData(c, chunk) {
        if (settled) return;
        bodyStarted = true;
        if (!res.write(chunk) && !waitingDrain) {
          waitingDrain = true;
          c.pause();
          res.once('drain', resume);
        }
      },
      onResponseEnd() {
        if (settled) return;
        res.end();
        finish(status);
      },
      onResponseError(_c, err) {
        fail(err);
      },
    };

    res.on('close', onClientClose);
    if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
      const ms = Math.min(opts.timeoutMs, up.requestTimeoutMs ?? Infinity);
      timer = setTimeout(() => {
        const e = new UpstreamDeadline(ms);
        controller?.abort(e);
        fail(e);
      }, ms);
    }
    try {
      up.dispatcher.dispatch({ method: method as Dispatcher.HttpMethod, path, headers, body, upgrade: null }, handler);
    } catch (e) {
      // Invalid request options (a header undici refuses): nothing reached the upstream.
      fail(newInternalError(e));
    }
  });
}

/** What forward() needs of a response; HTTP/1.1 and HTTP/2 compat responses both have it. */
interface ClientResponse {
  writeHead(status: number, headers: Record<string, string | string[]>): unknown;
  flushHeaders(): void;
  write(chunk: Buffer): boolean;
  end(): unknown;
  destroy(): unknown;
  on(event: 'close', fn: () => void): unknown;
  off(event: 'close', fn: () => void): unknown;
  once(event: 'drain', fn: () => void): unknown;
}

/** HTTP/1.1 requests carry a body only with Content-Length or Transfer-Encoding; HTTP/2 says so on the stream. */
function hasBody(req: Request): boolean {
  const stream = (req as { stream?: { endAfterHeaders?: boolean } }).stream;
  if (stream !== undefined && typeof stream.endAfterHeaders === 'boolean') return !stream.endAfterHeaders;
  const cl = req.headers['content-length'];
  if (cl !== undefined) return cl !== '0';
  return req.headers['transfer-encoding'] !== undefined;
}

/** The request target on the upstream: its URL path prefix (if the kubeconfig server has one) plus ours. */
export function upstreamPath(up: Upstream, target: string): string {
  let p = target;
  if (!p.startsWith('/')) {
    // Absolute-form targets ("https://host/api") are legal HTTP/1.1; only path and query go upstream.
    try {
      const u = new URL(p);
      p = u.pathname + u.search;
    } catch {
      p = '/' + p;
    }
  }
  const base = up.url.pathname;
  if (base === '/' || base === '') return p;
  return (base.endsWith('/') ? base.slice(0, -1) : base) + p;
}

// ---------------------------------------------------------------------------------------------------------------
// Requests the gateway makes itself.

export interface JSONResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Parsed JSON, or the text when the body is not JSON. */
  body: any;
}

/**
 * A small JSON exchange with the upstream as the gateway (optionally impersonating someone). Transport failures
 * throw the same 503/504/502 Status as forward(); HTTP errors are returned, not thrown.
 */
export async function requestJSON(up: Upstream, method: string, path: string, body?: unknown, impersonate?: UserInfo, timeoutMs = up.requestTimeoutMs ?? 30_000): Promise<JSONResponse> {
  const headers: string[] = ['accept', 'application/json'];
  let payload: string | undefined;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    headers.push('content-type', 'application/json');
  }
  if (up.authHeader) headers.push('authorization', up.authHeader);
  if (impersonate) appendImpersonation(headers, impersonate);
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new UpstreamDeadline(timeoutMs)), timeoutMs);
  let started = false;
  try {
    const r = await up.dispatcher.request({
      method: method as Dispatcher.HttpMethod,
      path: upstreamPath(up, path),
      headers,
      body: payload,
      signal: ac.signal,
    });
    started = true;
    const text = await r.body.text();
    let parsed: any = text;
    const ct = r.headers['content-type'];
    if (typeof ct === 'string' && ct.startsWith('application/json')) {
      try {
        parsed = JSON.parse(text);
      } catch {
        // keep the text
      }
    }
    return { status: r.statusCode, headers: r.headers, body: parsed };
  } catch (e) {
    if (e instanceof StatusError) throw e;
    const reason = ac.signal.aborted ? ac.signal.reason : e;
    throw upstreamFailure(up, reason, started || isResponsePhase(e) ? 'response' : 'connect');
  } finally {
    clearTimeout(timer);
  }
}

/** undici's errors once the request was on the wire (socket closed, malformed response). */
function isResponsePhase(e: unknown): boolean {
  const code = (e as { code?: string } | null)?.code;
  return code === 'UND_ERR_SOCKET' || code === 'HPE_INVALID_CONSTANT' || (typeof code === 'string' && code.startsWith('HPE_'));
}

/**
 * Asks the upstream whether attrs.user may do what attrs describe (authorization.k8s.io/v1 SubjectAccessReview,
 * created with the gateway's own credentials). A review the upstream refuses to evaluate is an error, as the
 * webhook authorizer treats it: the caller answers 500 rather than guessing.
 */
export async function subjectAccessReview(up: Upstream, attrs: Attributes): Promise<Decision> {
  const spec: Record<string, unknown> = { user: attrs.user.username, groups: attrs.user.groups };
  if (attrs.user.uid) spec.uid = attrs.user.uid;
  if (attrs.user.extra && Object.keys(attrs.user.extra).length > 0) spec.extra = attrs.user.extra;
  if (attrs.isResourceRequest) {
    const resourceAttributes: Record<string, unknown> = {
      namespace: attrs.namespace,
      verb: attrs.verb,
      group: attrs.apiGroup,
      version: attrs.apiVersion,
      resource: attrs.resource,
      subresource: attrs.subresource,
      name: attrs.name,
    };
    // An apiserver before 1.31 drops these fields and decides the broader read, as it would have without them.
    if (attrs.fieldSelector) resourceAttributes.fieldSelector = { requirements: attrs.fieldSelector };
    if (attrs.labelSelector) resourceAttributes.labelSelector = { requirements: attrs.labelSelector };
    spec.resourceAttributes = resourceAttributes;
  } else {
    spec.nonResourceAttributes = { path: attrs.path, verb: attrs.verb };
  }
  const r = await requestJSON(up, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec,
  });
  if (r.status !== 201 && r.status !== 200) {
    const why = typeof r.body === 'object' && r.body?.message ? r.body.message : `HTTP ${r.status}`;
    throw newInternalError(`subjectaccessreviews.authorization.k8s.io on ${describeUpstream(up)}: ${why}`);
  }
  const st = r.body?.status ?? {};
  const allowed = st.allowed === true && st.denied !== true;
  return { allowed, reason: typeof st.reason === 'string' ? st.reason : '', ...(!allowed && st.denied === true ? { denied: true } : {}) };
}
