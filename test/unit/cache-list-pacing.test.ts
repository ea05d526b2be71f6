// Streamed LISTs from the cache share the event loop with every other request: a list whose client keeps up
// must still hand the loop back between slices, concurrent lists take turns, a full socket is waited for, and
// the request (with its flow-control seats) is not over until the last byte has left.

import { EventEmitter } from 'node:events';
import { beforeAll, describe, expect, it } from 'vitest';
import { MergedCache } from '../../src/cache/merged.js';
import { serveCached } from '../../src/cache/serve.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';
import { nextTurn, paced, type StreamingBody } from '../../src/server/respond.js';
import { generatePod } from '../sim/podgen.js';

const PODS = 3000;

function newCache(): MergedCache {
  const cache = new MergedCache({ instanceID: 'test', windowSize: 100, dropManagedFields: true, rvBase: 1000 });
  const pods = [];
  for (let i = 0; i < PODS; i++) {
    const { pod, status } = generatePod({ namespace: 'load', app: 'web', index: i, node: `node-${i % 10}`, phase: 'Running' });
    pod.metadata.resourceVersion = String(i + 1);
    (pod as any).status = status;
    pods.push(pod);
  }
  cache.sink('member-a', 'pods').replace(pods, String(PODS + 1));
  return cache;
}

/**
 * A response to a client that reads everything at once: write() never pushes back unless told to. 'finish' comes
 * only when the test says the last byte left (finishNow), or at end() when autoFinish is set.
 */
class FakeResponse extends EventEmitter {
  chunks: string[] = [];
  headersSent = false;
  writableFinished = false;
  destroyed = false;
  full = false;
  ended = false;
  constructor(private readonly autoFinish = true, private readonly onWrite?: () => void) {
    super();
  }
  setHeader(): void {}
  writeHead(): this {
    this.headersSent = true;
    return this;
  }
  write(chunk: string): boolean {
    if (this.ended) throw new Error('write after end');
    this.chunks.push(chunk);
    this.onWrite?.();
    return !this.full;
  }
  end(chunk?: string): this {
    if (chunk) this.chunks.push(chunk);
    this.ended = true;
    if (this.autoFinish) this.finishNow();
    return this;
  }
  finishNow(): void {
    this.writableFinished = true;
    this.emit('finish');
    this.emit('close');
  }
  body(): string {
    return this.chunks.join('');
  }
}

function listCtx(res: FakeResponse): RequestContext {
  const url = new URL('https://gw.invalid/api/v1/pods');
  return {
    req: { headers: {} },
    res,
    url,
    auditID: 'a',
    info: newRequestInfo('GET', url.pathname, url.searchParams),
    user: { username: 'u', groups: [] },
  } as unknown as RequestContext;
}

const serve = (cache: MergedCache, res: FakeResponse) => serveCached(listCtx(res), cache, { stale: () => [] });

describe('streamed LISTs share the event loop', () => {
  let cache: MergedCache;
  beforeAll(() => {
    cache = newCache();
  });

  it('a list whose client never pushes back hands the loop back between slices', async () => {
    let turnsDuringList = 0;
    let listing = true;
    const count = () => {
      if (!listing) return;
      turnsDuringList++;
      setImmediate(count);
    };
    const res = new FakeResponse();
    setImmediate(count);
    await serve(cache, res);
    listing = false;
    // Before pacing the whole body went out in the request's own turn: no other callback ran meanwhile.
    expect(turnsDuringList).toBeGreaterThan(0);
    const list = JSON.parse(res.body());
    expect(list.items).toHaveLength(PODS);
    expect(res.chunks.length).toBeGreaterThan(10);
  });

  it('concurrent lists take turns instead of one finishing before the other starts', async () => {
    const order: string[] = [];
    const a = new FakeResponse(true, () => order.push('a'));
    const b = new FakeResponse(true, () => order.push('b'));
    await Promise.all([serve(cache, a), serve(cache, b)]);
    expect(JSON.parse(a.body()).items).toHaveLength(PODS);
    expect(a.body()).toBe(b.body());
    // Round-robin: neither list is written whole before the other starts.
    expect(order.indexOf('b')).toBeLessThan(order.lastIndexOf('a'));
    expect(order.indexOf('a')).toBeLessThan(order.lastIndexOf('b'));
  });

  it('waits for drain when the socket is full, then for its turn', async () => {
    const res = new FakeResponse();
    res.full = true;
    const done = serve(cache, res);
    for (let i = 0; i < 20; i++) await nextTurn();
    // Nothing more is written while the socket stays full.
    const written = res.chunks.length;
    expect(written).toBe(1);
    res.full = false;
    res.emit('drain');
    await done;
    expect(JSON.parse(res.body()).items).toHaveLength(PODS);
  });

  it('the request is over only when its last byte has left, so flow control holds its seats until then', async () => {
    const res = new FakeResponse(false);
    let over = false;
    const done = serve(cache, res).then(() => (over = true));
    for (let i = 0; i < 500 && !res.ended; i++) await nextTurn();
    expect(res.ended).toBe(true);
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(over).toBe(false);
    res.finishNow();
    await done;
    expect(over).toBe(true);
  });

  it('a client that goes away ends the list without more writes', async () => {
    const res = new FakeResponse();
    res.full = true;
    const done = serve(cache, res);
    await nextTurn();
    res.destroyed = true;
    res.emit('close');
    await done;
    expect(res.chunks.length).toBe(1);
  });
});

describe('paced', () => {
  it('passes writes through and answers false once the slice is used up, then drains at its next turn', async () => {
    const inner = new FakeResponse();
    const p: StreamingBody = paced(inner as unknown as StreamingBody);
    const start = performance.now();
    let n = 0;
    while (p.write('x'.repeat(1024))) {
      n++;
      if (performance.now() - start > 1000) throw new Error('never yielded');
    }
    expect(inner.chunks.length).toBe(n + 1);
    let drained = false;
    p.on('drain', () => (drained = true));
    expect(drained).toBe(false);
    await nextTurn();
    expect(drained).toBe(true);
  });
});
