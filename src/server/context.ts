// What every step of the chain knows about the request it is handling. Steps fill it in order: request info,
// then the caller's identity, then (issue 5) audit, flow control and admission decisions.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { UserInfo } from '../api/user.js';
import type { RequestInfo } from '../request/requestinfo.js';

export type Request = IncomingMessage | Http2ServerRequest;
export type Response = ServerResponse | Http2ServerResponse;

export interface RequestContext {
  req: Request;
  res: Response;
  /** The request URL; for /clusters/<name>/... the path after the prefix. */
  url: URL;
  /** Audit-ID: the client's if it sent one, else generated; echoed on every response. */
  auditID: string;
  info: RequestInfo;
  /** The caller as authenticated, or the identity it impersonates when that was allowed. */
  user?: UserInfo;
  /** Set when the caller's own Impersonate-* headers were honoured: who really asked. */
  impersonator?: UserInfo;
  /** For /clusters/<name>/... requests: the member cluster. */
  cluster?: string;
  /** When a request that is not long-running must be answered by (epoch ms); unset for long-running ones. */
  deadline?: number;
  /** The request body, once a step has read it (src/request/body.ts). */
  body?: Buffer;
  /** For reads served from the member cache: which members the caller may read (undefined: all). */
  allowedClusters?: (cluster: string) => boolean;
  /** Set for HTTP/1.1 upgrade requests (exec, attach, port-forward): res is unused, routing tunnels the socket. */
  upgrade?: { socket: Duplex; head: Buffer };
  /**
   * Set when authentication or authorization refused the request. kube-apiserver's filters answer those before its
   * instrumented handlers, so apiserver_request_total and apiserver_request_duration_seconds leave them out (they are
   * in authentication_attempts and authorization_attempts_total); here that also keeps callers who cannot
   * authenticate from adding label sets with made-up paths.
   */
  refusedByFilter?: boolean;
  /**
   * Set when flow control turned the request away (429): kube-apiserver counts such a request in
   * apiserver_request_total (RecordDroppedRequest) but not in its latency histograms.
   */
  droppedByFlowControl?: boolean;
  /** Seconds the request waited in a flow-control queue before it executed (apiserver_request_sli_duration_seconds leaves them out). */
  queueWaitSeconds?: number;
  log: Logger;
}
