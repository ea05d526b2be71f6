// Where a request's time goes, for a gateway that runs in the benchmark's process: the moments Node and undici
// publish on diagnostics_channel (the request parsed, the upstream request's head about to be written and its
// answer's head read, the last byte of the answer handed to the socket), matched to a tagged load's own
// (X-Bench-Seq, see LoadSpec.tagged) on the process's monotonic clock. Channels are per thread, so a load running
// in a worker thread is not seen here, only the gateway's side.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { LoadResult } from './01-forwarding.js';
import { hrtimeMs, summarize } from '../lib.js';

/** One request's moments in the gateway (hrtimeMs); the upstream ones only for a forwarded request, when asked. */
export interface ServerMarks {
  parsed: number;
  finished: number;
  upstreamSent?: number;
  upstreamAnswered?: number;
}

export interface ServerStages {
  /** Stops listening: each request's time in the gateway (parsed to finished), and its marks by X-Bench-Seq. */
  stop(): { times: number[]; marks: Map<number, ServerMarks> };
}

/**
 * Times the gateway's requests to path. With upstreamPath, also the upstream request the gateway makes for each:
 * only right for one request at a time (concurrency 1), as each upstream request is given to the last one parsed.
 */
export function serverStages(path: string, upstreamPath?: string): ServerStages {
  const open = new Map<object, ServerMarks>();
  let current: ServerMarks | undefined;
  const upstream = new WeakMap<object, ServerMarks>();
  const times: number[] = [];
  const marks = new Map<number, ServerMarks>();
  const onStart = (m: unknown) => {
    const { request } = m as { request: { url?: string } };
    if (request.url !== path) return;
    current = { parsed: hrtimeMs(), finished: NaN };
    open.set(request, current);
  };
  const onFinish = (m: unknown) => {
    const { request } = m as { request: { headers: Record<string, string | string[] | undefined> } };
    const k = open.get(request);
    if (!k) return;
    open.delete(request);
    k.finished = hrtimeMs();
    times.push(k.finished - k.parsed);
    const seq = request.headers['x-bench-seq'];
    if (typeof seq === 'string') marks.set(Number(seq), k);
  };
  const onSent = (m: unknown) => {
    const { request } = m as { request: { path?: string } };
    if (!current || request.path !== upstreamPath) return;
    current.upstreamSent = hrtimeMs();
    upstream.set(request, current);
  };
  const onAnswered = (m: unknown) => {
    const { request } = m as { request: object };
    const k = upstream.get(request);
    if (k) k.upstreamAnswered = hrtimeMs();
  };
  subscribe('http.server.request.start', onStart);
  subscribe('http.server.response.finish', onFinish);
  if (upstreamPath) {
    subscribe('undici:client:sendHeaders', onSent);
    subscribe('undici:request:headers', onAnswered);
  }
  return {
    stop() {
      unsubscribe('http.server.request.start', onStart);
      unsubscribe('http.server.response.finish', onFinish);
      if (upstreamPath) {
        unsubscribe('undici:client:sendHeaders', onSent);
        unsubscribe('undici:request:headers', onAnswered);
      }
      return { times, marks };
    },
  };
}

/** Where a request's time went, in ms: before the gateway had parsed it, inside the gateway, after it handed over the answer. */
export interface Around {
  before: number;
  inside: number;
  after: number;
}

/** Each tagged request of load split around the gateway's handling of it (requests the gateway did not time are left out). */
export function splitAround(load: LoadResult, marks: Map<number, ServerMarks>): Array<Around & { total: number; marks: ServerMarks }> {
  const out: Array<Around & { total: number; marks: ServerMarks }> = [];
  const spans = load.spans ?? [];
  for (const [seq, k] of marks) {
    const t0 = spans[2 * seq];
    const t1 = spans[2 * seq + 1];
    if (t0 === undefined || t1 === undefined) continue;
    out.push({ total: t1 - t0, before: k.parsed - t0, inside: k.finished - k.parsed, after: t1 - k.finished, marks: k });
  }
  return out;
}

/** The mean split of the slowest 1% of requests (at or over the p99 of their totals). */
export function tailSplit(xs: Array<Around & { total: number }>): Around {
  const p99 = summarize(xs.map((x) => x.total)).p99;
  const tail = xs.filter((x) => x.total >= p99);
  const mean = (f: (x: Around) => number) => tail.reduce((a, x) => a + f(x), 0) / Math.max(1, tail.length);
  return { before: mean((x) => x.before), inside: mean((x) => x.inside), after: mean((x) => x.after) };
}
