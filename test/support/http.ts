// Raw HTTPS requests to a kube-apiserver (real or simulated) with a client certificate, for tests that check
// exact status codes, headers and bodies.

import { Agent, request } from 'undici';

export interface ClusterEndpoint {
  url: string;
  caPem: string;
  certPem?: string;
  keyPem?: string;
  token?: string;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

const agents = new WeakMap<ClusterEndpoint, Agent>();

function agentFor(ep: ClusterEndpoint): Agent {
  let a = agents.get(ep);
  if (!a) {
    a = new Agent({ connect: { ca: ep.caPem, cert: ep.certPem, key: ep.keyPem }, pipelining: 0 });
    agents.set(ep, a);
  }
  return a;
}

export async function call(ep: ClusterEndpoint, method: string, path: string, opts: { body?: unknown; contentType?: string; headers?: Record<string, string>; accept?: string } = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (ep.token) headers.authorization = `Bearer ${ep.token}`;
  if (opts.accept) headers.accept = opts.accept;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] = opts.contentType ?? 'application/json';
  }
  const res = await request(new URL(path, ep.url), { method: method as any, headers, body, dispatcher: agentFor(ep) });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    headers: res.headers as Record<string, string | string[] | undefined>,
    text,
    json: () => JSON.parse(text),
  };
}

export interface OpenWatch {
  /** Events received so far, parsed. */
  events: any[];
  /** Resolves when pred holds for the events so far; rejects after timeoutMs with what was seen. */
  waitFor(pred: (events: any[]) => boolean, timeoutMs?: number): Promise<any[]>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

/** Opens a watch and resolves once the server has answered with its headers (the watch is established). */
export async function openWatch(ep: ClusterEndpoint, path: string, accept?: string): Promise<OpenWatch> {
  const ac = new AbortController();
  const headers: Record<string, string> = {};
  if (ep.token) headers.authorization = `Bearer ${ep.token}`;
  if (accept) headers.accept = accept;
  const res = await request(new URL(path, ep.url), { method: 'GET', headers, dispatcher: agentFor(ep), signal: ac.signal });
  if (res.statusCode !== 200) throw new Error(`watch ${path}: HTTP ${res.statusCode}: ${await res.body.text()}`);
  const events: any[] = [];
  const waiters = new Set<() => void>();
  const ended = (async () => {
    let buf = '';
    try {
      for await (const chunk of res.body) {
        buf += chunk.toString();
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) events.push(JSON.parse(line));
        }
        for (const w of waiters) w();
      }
    } catch (e) {
      if (!ac.signal.aborted) throw e;
    } finally {
      for (const w of waiters) w();
    }
  })();
  let done = false;
  void ended.finally(() => (done = true));
  return {
    events,
    ended,
    close: () => ac.abort(),
    waitFor(pred, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pred(events)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(events);
          } else if (done) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`watch ended before the condition held; events: ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name]))}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out after ${timeoutMs} ms; events: ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name]))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}
