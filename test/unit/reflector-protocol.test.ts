// The reflector's requests and its reactions to each answer, against a scripted server: paged lists, the watch
// parameters client-go sends, resuming from the last version, 410 on a continue page and in a watch, 429 with
// Retry-After, "Too large resource version", streaming lists and their fallback, gzip, a failing sink, and stop.
// Lists reach the sink page by page (startList, add, end or abort); the last part runs the reflector into a
// MergedCache to check what watchers of the cache see while a list is under way.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { backoff, tokenBucket } from '../../src/cache/ratelimit.js';
import { MergedCache } from '../../src/cache/merged.js';
import { startReflector, watchTimeoutSeconds, type ListIntake, type Reflector, type ReflectorSink } from '../../src/cache/reflector.js';
import type { StoreEvent } from '../../src/cache/store.js';
import { upstreamFromEndpoint, type Upstream } from '../../src/upstream/client.js';

const log = pino({ level: 'silent' });

type Step = (req: IncomingMessage, res: ServerResponse, q: URLSearchParams) => void;

/** Answers requests with the scripted steps in order; requests beyond the script hang like a quiet watch. */
async function scripted(steps: Step[]) {
  const requests: URLSearchParams[] = [];
  const headers: IncomingMessage['headers'][] = [];
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const q = new URL(req.url!, 'http://x').searchParams;
    requests.push(q);
    headers.push(req.headers);
    const step = steps.shift();
    if (step) step(req, res, q);
    else {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      open.add(res);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    headers,
    steps,
    async close() {
      for (const r of open) r.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

const pod = (name: string, rv: string, extra: Record<string, unknown> = {}): KubeObject => ({ metadata: { name, namespace: 'ns', resourceVersion: rv }, ...extra });
const json = (code: number, body: unknown, hdrs: Record<string, string> = {}): Step => (_req, res) => {
  res.writeHead(code, { 'Content-Type': 'application/json', ...hdrs });
  res.end(JSON.stringify(body));
};
const list = (rv: string, items: KubeObject[], cont = ''): Step => json(200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: rv, continue: cont || undefined }, items });
const status = (code: number, reason: string, message: string, extra: Record<string, unknown> = {}) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code, ...extra });
/** A watch that sends these events and then ends (or stays open with keepOpen). */
const watch = (events: Array<{ type: string; object: unknown }>, keepOpen = false): Step => (_req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  for (const e of events) res.write(JSON.stringify(e) + '\n');
  if (!keepOpen) setTimeout(() => res.end(), 5);
};
const bookmark = (rv: string, annotations?: Record<string, string>) => ({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: rv, annotations } } });

/** A step that answers only when the test releases it: a page or a watch that is slow to come. */
function held() {
  let release!: (step: Step) => void;
  const answer = new Promise<Step>((r) => (release = r));
  let asked = false;
  const step: Step = (req, res, q) => {
    asked = true;
    void answer.then((s) => s(req, res, q));
  };
  return { step, release, asked: () => asked };
}

/** Records every call of the list protocol, one line each. */
class Recorder implements ReflectorSink {
  calls: string[] = [];
  added: KubeObject[] = [];
  throwOnApply = 0;
  throwOnAdd = 0;
  startList(): ListIntake {
    this.calls.push('list');
    return {
      add: (objects) => {
        if (this.throwOnAdd > 0) {
          this.throwOnAdd--;
          throw new Error('sink is full');
        }
        this.added.push(...objects);
        this.calls.push(`add ${objects.map((o) => o.metadata.name).join(',')}`);
      },
      end: (listRV) => this.calls.push(`end @${listRV}`),
      abort: () => this.calls.push('abort'),
    };
  }
  apply(type: string, obj: KubeObject) {
    if (this.throwOnApply > 0) {
      this.throwOnApply--;
      throw new Error('sink is broken');
    }
    this.calls.push(`${type} ${obj.metadata.name} @${obj.metadata.resourceVersion}`);
  }
  progress(rv: string) {
    this.calls.push(`progress @${rv}`);
  }
}

async function until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('reflector protocol', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  const run = async <S extends ReflectorSink = Recorder>(steps: Step[], extra: { useWatchList?: boolean; pageSize?: number; onStatus?: () => void; token?: string; sink?: S } = {}) => {
    const srv = await scripted(steps);
    const up: Upstream = upstreamFromEndpoint({ name: 'm', url: srv.url, role: 'member cluster', token: extra.token });
    const sink = (extra.sink ?? new Recorder()) as S;
    const r: Reflector = startReflector({
      upstream: up,
      path: '/api/v1/pods',
      sink,
      limiter: tokenBucket(1000, 1000),
      log,
      pageSize: extra.pageSize ?? 2,
      useWatchList: extra.useWatchList,
      onStatus: extra.onStatus,
      backoff: backoff({ initialMs: 5, maxMs: 20 }),
    });
    cleanup.push(() => srv.close(), () => up.close(), () => r.stop());
    return { srv, sink, r };
  };

  it('lists in pages, fills in kind and apiVersion, then watches from the list version as client-go does', async () => {
    const { srv, sink, r } = await run([
      list('100', [pod('a', '90'), pod('b', '91')], 'tok-1'),
      list('100', [pod('c', '92', { kind: 'Pod', apiVersion: 'v1' })]),
      watch([{ type: 'ADDED', object: pod('d', '101') }, bookmark('105')], true),
    ], { token: 'secret-token' });
    await until(() => sink.calls.length === 6, 'the watch events');
    expect(sink.calls).toEqual(['list', 'add a,b', 'add c', 'end @100', 'ADDED d @101', 'progress @105']);
    expect(sink.added.every((o) => o.kind === 'Pod' && o.apiVersion === 'v1')).toBe(true);
    const [p1, p2, w] = srv.requests;
    expect(Object.fromEntries(p1)).toEqual({ limit: '2' });
    expect(Object.fromEntries(p2)).toEqual({ limit: '2', continue: 'tok-1' });
    expect(w.get('watch')).toBe('1');
    expect(w.get('allowWatchBookmarks')).toBe('true');
    expect(w.get('resourceVersion')).toBe('100');
    expect(w.has('sendInitialEvents')).toBe(false);
    const timeout = Number(w.get('timeoutSeconds'));
    expect(timeout).toBeGreaterThanOrEqual(300);
    expect(timeout).toBeLessThan(600);
    expect(srv.headers[0].authorization).toBe('Bearer secret-token');
    expect(srv.headers[0]['accept-encoding']).toBe('gzip');
    expect(srv.headers[2]['accept-encoding']).toBeUndefined();
    expect(r.synced).toBe(true);
    expect(r.stale).toBe(false);
    expect(r.resourceVersion).toBe('105');
    expect(r.stats).toMatchObject({ lists: 1, relists: 0, events: 1 });
  });

  it('resumes an ended watch from the last version seen, event or bookmark, without listing again', async () => {
    const { srv, sink, r } = await run([
      list('10', [pod('a', '5')]),
      watch([{ type: 'MODIFIED', object: pod('a', '11') }]),
      watch([bookmark('20')]),
      watch([{ type: 'DELETED', object: pod('a', '21') }], true),
    ]);
    await until(() => sink.calls.length === 6, 'the events');
    expect(sink.calls).toEqual(['list', 'add a', 'end @10', 'MODIFIED a @11', 'progress @20', 'DELETED a @21']);
    expect(srv.requests.slice(1).map((q) => q.get('resourceVersion'))).toEqual(['10', '11', '20']);
    expect(r.stats.watchRestarts).toBe(2);
    expect(r.stats.lists).toBe(1);
  });

  it('starts the list over when a continue token expires mid-pages: the first attempt is abandoned, the second starts afresh', async () => {
    const { srv, sink } = await run([
      list('100', [pod('a', '1'), pod('b', '2')], 'tok-1'),
      json(410, status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.')),
      list('200', [pod('a', '150'), pod('c', '160')]),
    ]);
    await until(() => sink.calls.length === 6 && srv.requests.length === 4, 'the relist and watch');
    expect(sink.calls).toEqual(['list', 'add a,b', 'abort', 'list', 'add a,c', 'end @200']);
    expect(Object.fromEntries(srv.requests[2])).toEqual({ limit: '2' });
    expect(srv.requests[3].get('resourceVersion')).toBe('200');
  });

  it('lists again on a 410 ERROR event and on an HTTP 410, and hands the sink the new state', async () => {
    const { srv, sink, r } = await run([
      list('10', [pod('a', '5')]),
      watch([{ type: 'ERROR', object: status(410, 'Expired', 'too old resource version: 10 (50)') }]),
      list('60', [pod('b', '55')]),
      json(410, status(410, 'Gone', 'too old resource version: 60 (70)')),
      list('80', [pod('b', '75')]),
      watch([{ type: 'ADDED', object: pod('c', '81') }], true),
    ]);
    await until(() => sink.calls.length === 10, 'the relists');
    expect(sink.calls).toEqual(['list', 'add a', 'end @10', 'list', 'add b', 'end @60', 'list', 'add b', 'end @80', 'ADDED c @81']);
    expect(srv.requests.map((q) => q.get('watch') ? `watch@${q.get('resourceVersion')}` : 'list')).toEqual(['list', 'watch@10', 'list', 'watch@60', 'list', 'watch@80']);
    expect(r.stats.relists).toBe(2);
    expect(r.stale).toBe(false);
  });

  it('lists again when the member answers "Too large resource version" (a member restored from an older backup)', async () => {
    const { srv, sink } = await run([
      list('10', [pod('a', '5')]),
      json(504, status(504, 'Timeout', 'Too large resource version: 10, current: 3', { details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 } })),
      list('3', [pod('z', '2')]),
    ]);
    await until(() => sink.calls.length === 6 && srv.requests.length === 4, 'the relist');
    expect(sink.calls).toEqual(['list', 'add a', 'end @10', 'list', 'add z', 'end @3']);
    expect(srv.requests[3].get('resourceVersion')).toBe('3');
  });

  it('waits out a 429 (Retry-After) and watches again from the same version, marked stale meanwhile', async () => {
    let changes = 0;
    const { srv, r } = await run([
      list('10', [pod('a', '5')]),
      json(429, status(429, 'TooManyRequests', 'Too many requests, please try again later.'), { 'Retry-After': '1' }),
    ], { onStatus: () => changes++ });
    await until(() => srv.requests.length === 2, 'the refused watch');
    await until(() => r.stale, 'stale');
    expect(r.lastError).toBe('watch: HTTP 429: Too many requests, please try again later.');
    const refusedAt = Date.now();
    await until(() => srv.requests.length === 3, 'the next watch', 3000);
    expect(Date.now() - refusedAt).toBeGreaterThanOrEqual(900);
    expect(srv.requests[2].get('resourceVersion')).toBe('10');
    await until(() => !r.stale, 'recovery');
    expect(r.stats.lists).toBe(1);
    // synced, stale, lastError... each transition was announced.
    expect(changes).toBeGreaterThanOrEqual(3);
  });

  it('retries a refused list, and lists again after an ERROR event other than 410, keeping the last error', async () => {
    const { srv, sink, r } = await run([
      json(403, status(403, 'Forbidden', 'pods is forbidden: User "fleetgate" cannot list resource "pods" in API group "" at the cluster scope')),
      list('10', [pod('a', '5')]),
      watch([{ type: 'ERROR', object: status(500, 'InternalError', 'Internal error occurred: etcd is unhappy') }]),
      list('20', [pod('a', '15')]),
    ]);
    await until(() => sink.calls.length === 6, 'two lists');
    // The refused list never began in the sink.
    expect(sink.calls).toEqual(['list', 'add a', 'end @10', 'list', 'add a', 'end @20']);
    expect(r.lastError).toBe('watch: Internal error occurred: etcd is unhappy');
    expect(r.stats.relists).toBe(1);
    await until(() => !r.stale && srv.requests.length === 5, 'the next watch');
  });

  it('syncs from a streaming list: initial events reach the sink in batches of a page, ended by the closing bookmark', async () => {
    const { srv, sink, r } = await run([
      watch([
        { type: 'ADDED', object: pod('a', '3') },
        { type: 'ADDED', object: pod('b', '4') },
        { type: 'ADDED', object: pod('c', '5') },
        bookmark('9', { 'k8s.io/initial-events-end': 'true' }),
        { type: 'MODIFIED', object: pod('a', '10') },
      ]),
      watch([{ type: 'DELETED', object: pod('b', '11') }], true),
    ], { useWatchList: true });
    await until(() => sink.calls.length === 6, 'the events');
    expect(sink.calls).toEqual(['list', 'add a,b', 'add c', 'end @9', 'MODIFIED a @10', 'DELETED b @11']);
    expect(r.stats).toMatchObject({ lists: 1, events: 2 });
    const q = srv.requests[0];
    expect(q.get('sendInitialEvents')).toBe('true');
    expect(q.get('resourceVersionMatch')).toBe('NotOlderThan');
    expect(q.get('resourceVersion')).toBe('');
    expect(q.get('allowWatchBookmarks')).toBe('true');
    expect(srv.requests[1].get('resourceVersion')).toBe('10');
    expect(srv.requests[1].has('sendInitialEvents')).toBe(false);
    expect(r.watchList).toBe(true);
  });

  it('abandons a streaming list cut before its end, and falls back to list+watch when the server refuses it', async () => {
    const { srv, sink, r } = await run([
      // Cut short: a batch may have reached the sink, but the list never ends there.
      watch([{ type: 'ADDED', object: pod('a', '3') }, { type: 'ADDED', object: pod('b', '4') }, { type: 'ADDED', object: pod('c', '4') }]),
      json(422, status(422, 'Invalid', 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled')),
      list('10', [pod('a', '5'), pod('b', '6')]),
    ], { useWatchList: true });
    await until(() => sink.calls.length === 6 && srv.requests.length === 4, 'the fallback');
    expect(sink.calls).toEqual(['list', 'add a,b', 'abort', 'list', 'add a,b', 'end @10']);
    expect(r.watchList).toBe(false);
    expect(srv.requests[3].get('resourceVersion')).toBe('10');
    expect(srv.requests[3].has('sendInitialEvents')).toBe(false);
  });

  it('reads gzip-encoded lists', async () => {
    const body = JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items: [pod('a', '1'), pod('b', '2')] });
    const { sink } = await run([
      (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
        res.end(gzipSync(body));
      },
    ], { pageSize: 500 });
    await until(() => sink.calls.length === 3, 'the list');
    expect(sink.calls).toEqual(['list', 'add a,b', 'end @7']);
  });

  it('lists again when the sink fails to apply an event', async () => {
    const { sink, r } = await run([
      list('10', [pod('a', '5')]),
      watch([{ type: 'MODIFIED', object: pod('a', '11') }]),
      list('12', [pod('a', '11')]),
    ]);
    sink.throwOnApply = 1;
    await until(() => sink.calls.length === 6, 'the relist');
    expect(sink.calls).toEqual(['list', 'add a', 'end @10', 'list', 'add a', 'end @12']);
    expect(r.lastError).toBe('sink: sink is broken');
  });

  it('stops at once, even while a watch is open or a retry is pending', async () => {
    const { srv, r } = await run([list('10', [pod('a', '5')])]);
    await until(() => srv.requests.length === 2, 'the watch');
    const started = Date.now();
    await r.stop();
    expect(Date.now() - started).toBeLessThan(1000);
    const n = srv.requests.length;
    await new Promise((res) => setTimeout(res, 50));
    expect(srv.requests.length).toBe(n);
  });

  it('hands each page to the sink as it arrives; synced and a resourceVersion only once the last page is in', async () => {
    const page2 = held();
    const { sink, r } = await run([list('100', [pod('a', '90'), pod('b', '91')], 'tok-1'), page2.step]);
    await until(() => page2.asked(), 'the second page to be asked for');
    await until(() => sink.calls.length === 2, 'the first page in the sink');
    expect(sink.calls).toEqual(['list', 'add a,b']);
    expect(r.synced).toBe(false);
    expect(r.resourceVersion).toBeUndefined();
    expect(r.lastSyncedAt).toBeUndefined();
    page2.release(list('100', [pod('c', '92')]));
    await until(() => r.synced, 'synced');
    expect(sink.calls).toEqual(['list', 'add a,b', 'add c', 'end @100']);
    expect(r.resourceVersion).toBe('100');
  });

  it('abandons the list when the sink throws on a page, and lists again from the start', async () => {
    const { sink, r } = await run([
      list('10', [pod('a', '1'), pod('b', '2')], 'tok-1'),
      list('20', [pod('a', '1'), pod('b', '2')], 'tok-2'),
      list('20', [pod('c', '3')]),
    ]);
    sink.throwOnAdd = 1;
    await until(() => r.synced, 'synced');
    // The failed page never reached the sink, and the list it belonged to never ended there.
    expect(sink.calls).toEqual(['list', 'abort', 'list', 'add a,b', 'add c', 'end @20']);
    expect(r.lastError).toBe('sink: sink is full');
    expect(r.stats.lists).toBe(1);
  });

  it('abandons a list under way when stopped: nothing more reaches the sink', async () => {
    const page2 = held();
    const { sink, r } = await run([list('10', [pod('a', '1')], 'tok-1'), page2.step]);
    await until(() => page2.asked() && sink.calls.length === 2, 'the first page');
    await r.stop();
    page2.release(list('10', [pod('b', '2')]));
    await new Promise((res) => setTimeout(res, 30));
    expect(sink.calls).toEqual(['list', 'add a', 'abort']);
    expect(r.synced).toBe(false);
  });

  it('gathers the pages for a sink that takes lists whole (replace), and hands it nothing of an abandoned list', async () => {
    const whole = {
      calls: [] as string[],
      replace(objects: KubeObject[], listRV: string) {
        this.calls.push(`replace ${objects.map((o) => o.metadata.name).join(',')} @${listRV}`);
      },
      apply(type: string, obj: KubeObject) {
        this.calls.push(`${type} ${obj.metadata.name}`);
      },
    };
    const { sink } = await run([
      list('100', [pod('a', '1'), pod('b', '2')], 'tok-1'),
      json(410, status(410, 'Expired', 'continue token too old')),
      list('200', [pod('a', '1'), pod('c', '3')], 'tok-2'),
      list('200', [pod('d', '4')]),
      watch([{ type: 'ADDED', object: pod('e', '201') }], true),
    ], { sink: whole });
    await until(() => sink.calls.length === 2, 'the list and the event');
    expect(sink.calls).toEqual(['replace a,c,d @200', 'ADDED e']);
  });

  it('refuses a sink that takes no lists', () => {
    const up = upstreamFromEndpoint({ name: 'm', url: 'http://127.0.0.1:1', role: 'member cluster' });
    cleanup.push(() => up.close());
    expect(() => startReflector({ upstream: up, path: '/api/v1/pods', sink: { apply() {} }, limiter: tokenBucket(1, 1), log })).toThrow(/startList or replace/);
  });

  it('picks watch timeouts in [min, 2*min)', () => {
    expect(watchTimeoutSeconds(300, () => 0)).toBe(300);
    expect(watchTimeoutSeconds(300, () => 0.999)).toBe(599);
  });
});

/**
 * The reflector into a MergedCache, as the gateway runs it: what the cache's watchers see while a list comes in
 * page by page, and what stays behind when a list is given up.
 */
describe('reflector into the merged cache', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });
  const BASE = 5_000_000;

  const run = async (steps: Step[], extra: { useWatchList?: boolean; cache?: MergedCache } = {}) => {
    const srv = await scripted(steps);
    const up = upstreamFromEndpoint({ name: 'm', url: srv.url, role: 'member cluster' });
    const cache = extra.cache ?? new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: BASE });
    const r = startReflector({
      upstream: up,
      path: '/api/v1/pods',
      sink: cache.sink('m', 'pods'),
      limiter: tokenBucket(1000, 1000),
      log,
      pageSize: 2,
      useWatchList: extra.useWatchList,
      backoff: backoff({ initialMs: 5, maxMs: 20 }),
    });
    cleanup.push(() => srv.close(), () => up.close(), () => r.stop());
    const seen: StoreEvent[] = [];
    cache.pods.subscribe((ev) => seen.push(ev));
    const events = () => seen.map((e) => `${e.type} ${e.object.name}@${JSON.parse(String(e.object.json)).metadata.labels.v}`);
    const held = () => [...cache.pods.values()].map((o) => `${o.name}@${JSON.parse(String(o.json)).metadata.labels.v}`).sort();
    return { srv, cache, r, events, held };
  };
  /** A pod whose label v names its member version, so served objects (gateway versions) still show which one they are. */
  const vpod = (name: string, rv: string) => pod(name, rv, { metadata: { name, namespace: 'ns', resourceVersion: rv, labels: { v: rv } } });

  it('encodeNow reads pages of any size whole: declared lengths, chunked bodies that outgrow the buffer, gzip', async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: BASE });
    // Each pod padded with its own letter, so bytes of one page left over another would show.
    const padded = (name: string, rv: string, n: number) => pod(name, rv, { metadata: { name, namespace: 'ns', resourceVersion: rv, labels: { v: rv } }, spec: { pad: name[0]!.repeat(n) } });
    const body = (rv: string, items: KubeObject[], cont = '') => Buffer.from(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: rv, continue: cont || undefined }, items }));
    /** Written in small pieces over several turns, with no content-length: the reader cannot size its buffer. */
    const trickled = (b: Buffer): Step => (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      let at = 0;
      const next = () => {
        if (at >= b.length) return void res.end();
        res.write(b.subarray(at, (at += 7_777)));
        setImmediate(next);
      };
      next();
    };
    const gz = (b: Buffer): Step => (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
      res.end(gzipSync(b));
    };
    const pages = [
      [padded('a1', '1', 100), padded('a2', '2', 100)],
      // Past the first page's buffer and past 1 MiB: the buffer grows while the page arrives.
      [padded('b1', '3', 700_000), padded('b2', '4', 700_000)],
      [padded('c1', '5', 50_000), padded('c2', '6', 10)],
    ];
    const srv = await scripted([list('10', pages[0]!, 'p2'), trickled(body('10', pages[1]!, 'p3')), gz(body('10', pages[2]!))]);
    const up = upstreamFromEndpoint({ name: 'm', url: srv.url, role: 'member cluster' });
    const sink = cache.sink('m', 'pods');
    const r = startReflector({ upstream: up, path: '/api/v1/pods', sink, encodeNow: (b) => sink.encodePage(b), limiter: tokenBucket(1000, 1000), log, pageSize: 2, backoff: backoff({ initialMs: 5, maxMs: 20 }) });
    cleanup.push(() => srv.close(), () => up.close(), () => r.stop());
    await until(() => r.synced, 'the list to end');
    const got = [...cache.pods.values()].map((o) => JSON.parse(String(o.json))).map((o) => `${o.metadata.name}@${o.metadata.labels.v}:${o.spec.pad === o.metadata.name[0].repeat(o.spec.pad.length) ? o.spec.pad.length : 'torn'}`);
    expect(got.sort()).toEqual(['a1@1:100', 'a2@2:100', 'b1@3:700000', 'b2@4:700000', 'c1@5:50000', 'c2@6:10']);
  });

  it("encodeNow does not size its page buffer from a member's content-length beyond a bound", async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: BASE });
    let res: ServerResponse | undefined;
    // Declares a gigabyte, sends a few bytes of it and stalls.
    const liar: Step = (_req, r) => {
      res = r;
      r.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(2 ** 30) });
      r.write('{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[');
    };
    const srv = await scripted([liar]);
    const up = upstreamFromEndpoint({ name: 'm', url: srv.url, role: 'member cluster' });
    const sink = cache.sink('m', 'pods');
    const before = process.memoryUsage().arrayBuffers;
    const r = startReflector({ upstream: up, path: '/api/v1/pods', sink, encodeNow: (b) => sink.encodePage(b), limiter: tokenBucket(1000, 1000), log, pageSize: 2, backoff: backoff({ initialMs: 5, maxMs: 20 }) });
    cleanup.push(() => srv.close(), () => up.close(), () => r.stop());
    await until(() => res !== undefined, 'the list to be asked for');
    await new Promise((done) => setTimeout(done, 50));
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(128 * 2 ** 20);
    res!.destroy();
  });

  it('two members listed at once with encodeNow each get their own pages', async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: BASE });
    const gates = [held(), held(), held(), held()];
    const start = async (member: string, names: string[], g: Array<ReturnType<typeof held>>) => {
      const srv = await scripted([g[0].step, g[1].step]);
      const up = upstreamFromEndpoint({ name: member, url: srv.url, role: 'member cluster' });
      const sink = cache.sink(member, 'pods');
      const r = startReflector({ upstream: up, path: '/api/v1/pods', sink, encodeNow: (b) => sink.encodePage(b), limiter: tokenBucket(1000, 1000), log, pageSize: 2, backoff: backoff({ initialMs: 5, maxMs: 20 }) });
      cleanup.push(() => srv.close(), () => up.close(), () => r.stop());
      return { r, names };
    };
    // Pods of different sizes, so a page read over another's bytes could not pass for itself.
    const big = (name: string, rv: string) => pod(name, rv, { metadata: { name, namespace: 'ns', resourceVersion: rv, labels: { v: rv } }, spec: { pad: 'x'.repeat(2000) } });
    const one = await start('m1', ['a', 'b', 'c', 'd'], gates.slice(0, 2));
    const two = await start('m2', ['w', 'x', 'y', 'z'], gates.slice(2));
    await until(() => gates[0].asked() && gates[2].asked(), 'both first pages to be asked for');
    gates[0].release(list('10', [vpod('a', '1'), vpod('b', '2')], 'tok'));
    gates[2].release(list('20', [big('w', '1'), big('x', '2')], 'tok'));
    await until(() => gates[1].asked() && gates[3].asked(), 'both second pages to be asked for');
    gates[1].release(list('10', [vpod('c', '3'), vpod('d', '4')]));
    gates[3].release(list('20', [big('y', '3'), big('z', '4')]));
    await until(() => one.r.synced && two.r.synced, 'both lists to end');
    const held_ = (cluster: string) =>
      [...cache.pods.values()].map((o) => JSON.parse(String(o.json))).filter((o) => o.metadata.labels['fleetgate.io/cluster'] === cluster).map((o) => `${o.metadata.name}@${o.metadata.labels.v}`);
    expect(held_('m1')).toEqual(['a@1', 'b@2', 'c@3', 'd@4']);
    expect(held_('m2')).toEqual(['w@1', 'x@2', 'y@3', 'z@4']);
    expect(cache.lastMemberRV('m1', 'pods')).toBe('10');
    expect(cache.lastMemberRV('m2', 'pods')).toBe('20');
  });

  it('a relist moves objects forward page by page and deletes what the member no longer has only at its end', async () => {
    const page2 = held();
    const { cache, r, events, held: state } = await run([
      list('10', [vpod('a', '1'), vpod('b', '2')], 'tok-1'),
      list('10', [vpod('c', '3'), vpod('d', '4')]),
      watch([{ type: 'ERROR', object: status(410, 'Expired', 'too old resource version: 10 (50)') }]),
      // The relist: a changed, b unchanged, c gone, d changed, e new.
      list('60', [vpod('a', '51'), vpod('b', '2')], 'tok-2'),
      page2.step,
    ]);
    await until(() => page2.asked() && state().includes('a@51'), 'the relist\'s first page');
    expect(r.resourceVersion).toBeUndefined();
    expect(cache.lastMemberRV('m', 'pods')).toBe('10');
    // Mid-list: c and d are still there; a has moved forward, b has not changed.
    expect(state()).toEqual(['a@51', 'b@2', 'c@3', 'd@4']);
    expect(events().slice(4)).toEqual(['MODIFIED a@51']);
    page2.release(list('60', [vpod('d', '55'), vpod('e', '56')]));
    await until(() => r.resourceVersion === '60', 'the relist to end');
    expect(state()).toEqual(['a@51', 'b@2', 'd@55', 'e@56']);
    expect(events().slice(4)).toEqual(['MODIFIED a@51', 'MODIFIED d@55', 'ADDED e@56', 'DELETED c@3']);
    expect(cache.lastMemberRV('m', 'pods')).toBe('60');
  });

  it('a list started over after 410 on a continue token: what the first attempt saw is kept if it exists, deleted if not', async () => {
    const { cache, r, events, held: state } = await run([
      list('10', [vpod('old', '1')]),
      watch([{ type: 'ERROR', object: status(410, 'Expired', 'too old resource version: 10 (50)') }]),
      // First attempt at 60: a and b, then the continue token has expired.
      list('60', [vpod('a', '51'), vpod('b', '52')], 'tok-1'),
      json(410, status(410, 'Expired', 'continue token too old')),
      // Second attempt at 90: b is gone, a is on the second page.
      list('90', [vpod('c', '80'), vpod('old', '1')], 'tok-2'),
      list('90', [vpod('a', '51')]),
    ]);
    await until(() => r.resourceVersion === '90', 'the second attempt to end');
    expect(state()).toEqual(['a@51', 'c@80', 'old@1']);
    // a came in the abandoned attempt and again in the second: never deleted in between. b is gone at the end.
    expect(events()).toEqual(['ADDED old@1', 'ADDED a@51', 'ADDED b@52', 'ADDED c@80', 'DELETED b@52']);
    expect(cache.lastMemberRV('m', 'pods')).toBe('90');
  });

  it('a member removed while its list comes in leaves nothing behind', async () => {
    const page2 = held();
    const { cache, r, held: state } = await run([list('10', [vpod('a', '1'), vpod('b', '2')], 'tok-1'), page2.step]);
    await until(() => page2.asked() && state().length === 2, 'the first page');
    await cache.removeCluster('m');
    expect(state()).toEqual([]);
    page2.release(list('10', [vpod('c', '3')]));
    await until(() => r.synced, 'the list to end');
    expect(state()).toEqual([]);
    expect(cache.clusters()).toEqual([]);
    expect(cache.lastMemberRV('m', 'pods')).toBe('');
  });

  it('a streaming relist: initial events reach the cache in batches, deletions wait for the closing bookmark', async () => {
    let releaseEnd!: () => void;
    const endGate = new Promise<void>((r) => (releaseEnd = r));
    const { cache, r, events, held: state } = await run([
      watch([{ type: 'ADDED', object: vpod('a', '1') }, { type: 'ADDED', object: vpod('b', '2') }, { type: 'ADDED', object: vpod('c', '3') }, bookmark('9', { 'k8s.io/initial-events-end': 'true' })]),
      watch([{ type: 'ERROR', object: status(410, 'Expired', 'too old resource version: 9 (50)') }]),
      // The streaming relist: a changed, b unchanged, c gone; the closing bookmark comes when the test says.
      (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        for (const o of [vpod('a', '51'), vpod('b', '2')]) res.write(JSON.stringify({ type: 'ADDED', object: o }) + '\n');
        void endGate.then(() => res.write(JSON.stringify(bookmark('60', { 'k8s.io/initial-events-end': 'true' })) + '\n'));
      },
    ], { useWatchList: true });
    await until(() => state().includes('a@51'), 'the relist\'s first batch');
    expect(state()).toEqual(['a@51', 'b@2', 'c@3']);
    expect(r.resourceVersion).toBeUndefined();
    expect(cache.lastMemberRV('m', 'pods')).toBe('9');
    releaseEnd();
    await until(() => r.resourceVersion === '60', 'the closing bookmark');
    expect(state()).toEqual(['a@51', 'b@2']);
    expect(events()).toEqual(['ADDED a@1', 'ADDED b@2', 'ADDED c@3', 'MODIFIED a@51', 'DELETED c@3']);
    expect(cache.lastMemberRV('m', 'pods')).toBe('60');
    expect(r.watchList).toBe(true);
  });

  it('a streaming list cut short keeps what it delivered, deletes nothing, and is not synced', async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: BASE });
    cache.sink('m', 'pods').replace([vpod('gone', '1')], '5');
    const { r, held: state } = await run([
      watch([{ type: 'ADDED', object: vpod('a', '6') }, { type: 'ADDED', object: vpod('b', '7') }, { type: 'ADDED', object: vpod('c', '8') }]),
    ], { useWatchList: true, cache });
    // The batch of a page (a, b) went in; c waited for a batch that never filled and is dropped with the list.
    await until(() => state().length === 3, 'the first batch');
    await new Promise((res) => setTimeout(res, 30));
    expect(state()).toEqual(['a@6', 'b@7', 'gone@1']);
    expect(r.synced).toBe(false);
    expect(cache.lastMemberRV('m', 'pods')).toBe('5');
  });
});
