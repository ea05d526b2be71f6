// The chain step: headers on every classified answer, kube's plain-text 429, exempt and uncounted requests, watches
// that give their seats back after their initial events, and the metrics a dashboard reads.

import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserInfo } from '../../src/api/user.js';
import { stableUID } from '../../src/flowcontrol/config.js';
import { flowControlStep, markInitialEventsSent, newFlowControl, type FlowControl } from '../../src/flowcontrol/filter.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import { compose } from '../../src/server/chain.js';
import type { RequestContext } from '../../src/server/context.js';
import type { Gateway } from '../../src/server/gateway.js';
import { routingStep } from '../../src/server/routes.js';
import { UpgradeResponse } from '../../src/server/websocket.js';
import { upstreamFromEndpoint } from '../../src/upstream/client.js';

class FakeRes extends EventEmitter {
  headers: Record<string, string> = {};
  status = 0;
  body = '';
  headersSent = false;
  destroyed = false;
  setHeader(k: string, v: string) {
    this.headers[k.toLowerCase()] = v;
  }
  writeHead(code: number, h: Record<string, string> = {}) {
    this.status = code;
    for (const [k, v] of Object.entries(h)) this.setHeader(k, v);
    this.headersSent = true;
  }
  end(b = '') {
    this.body += b;
    this.emit('finish');
  }
  hangUp() {
    this.destroyed = true;
    this.emit('close');
  }
}

function ctxFor(method: string, url: string, user: UserInfo, deadlineMs: number | undefined = 60_000): RequestContext & { res: FakeRes } {
  const u = new URL(url, 'https://gw');
  const info = newRequestInfo(method, u.pathname, u.searchParams);
  return {
    req: {} as any,
    res: new FakeRes() as any,
    url: u,
    auditID: 'audit-1',
    info,
    user,
    deadline: info.longRunning || deadlineMs === undefined ? undefined : Date.now() + deadlineMs,
    log: pino({ level: 'silent' }),
  } as RequestContext & { res: FakeRes };
}

/** A response forward() can write to: it streams a watch's events. */
class StreamRes extends FakeRes {
  statusCode = 200;
  getHeader(k: string) {
    return this.headers[k.toLowerCase()];
  }
  flushHeaders() {}
  write(b: Buffer | string) {
    this.body += String(b);
    return true;
  }
  destroy() {
    this.hangUp();
  }
}

/** A request to be forwarded: the request the upstream gets is made from req's method and headers. */
function forwardedCtx(path: string): RequestContext & { res: StreamRes } {
  const u = new URL(path, 'https://gw');
  const req = Object.assign(new EventEmitter(), { method: 'GET', url: path, headers: {}, rawHeaders: [] as string[], socket: {} });
  return {
    req: req as any,
    res: new StreamRes() as any,
    url: u,
    auditID: 'audit-1',
    info: newRequestInfo('GET', u.pathname, u.searchParams),
    user: alice,
    log: pino({ level: 'silent' }),
  } as RequestContext & { res: StreamRes };
}

async function until(pred: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const alice: UserInfo = { username: 'alice', groups: ['system:authenticated'] };
const bob: UserInfo = { username: 'bob', groups: ['system:authenticated'] };
const root: UserInfo = { username: 'root', groups: ['system:masters', 'system:authenticated'] };

let dir: string;
let fc: FlowControl;
let registry: Registry;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-fcstep-'));
  // One seat for people, queues of 2: easy to fill.
  await writeFile(
    join(dir, 'fc.yaml'),
    `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: people}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    limitResponse:
      type: Queue
      queuing: {queues: 8, handSize: 1, queueLengthLimit: 2}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: catch-all}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 999
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: people}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: people}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`,
  );
  registry = new Registry();
  // 1000 seats, 1/1000 of them for people: ceil(1000 * 1 / 1000) = 1.
  fc = await newFlowControl({ configDir: dir, registry, log: pino({ level: 'silent' }), maxRequestsInflight: 600, maxMutatingRequestsInflight: 400 });
});

afterAll(async () => {
  fc.close();
  await rm(dir, { recursive: true, force: true });
});

function deferred() {
  let resolve!: () => void;
  const p = new Promise<void>((r) => (resolve = r));
  return { p, resolve };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('flow control step', () => {
  it('sets the PF headers (UIDs) and lets the request through', async () => {
    const step = flowControlStep(fc);
    const ctx = ctxFor('GET', '/api/v1/namespaces/a/configmaps', alice);
    let ran = false;
    await step(ctx, async () => {
      ran = true;
    });
    expect(ran).toBe(true);
    expect(ctx.res.headers['x-kubernetes-pf-flowschema-uid']).toBe(stableUID('FlowSchema/people'));
    expect(ctx.res.headers['x-kubernetes-pf-prioritylevel-uid']).toBe(stableUID('PriorityLevelConfiguration/people'));
    expect(fc.controller.levels.get('people')!.qs!.totSeatsInUse).toBe(0);
  });

  it('queues behind the one seat, then rejects a full queue with kube\'s plain-text 429', async () => {
    const step = flowControlStep(fc);
    const gate = deferred();
    const first = ctxFor('GET', '/api/v1/pods', alice);
    const running = step(first, () => gate.p);
    const waiting = [ctxFor('GET', '/api/v1/pods', alice), ctxFor('GET', '/api/v1/pods', alice)];
    const order: number[] = [];
    const queued = waiting.map((c, i) => step(c, async () => void order.push(i)));
    await tick();
    const third = ctxFor('GET', '/api/v1/pods', alice);
    await step(third, async () => {
      throw new Error('must not run');
    });
    expect(third.res.status).toBe(429);
    // Counted in apiserver_request_total, not in the latency histograms, as kube's RecordDroppedRequest.
    expect(third.droppedByFlowControl).toBe(true);
    expect(third.res.body).toBe('Too many requests, please try again later.\n');
    expect(third.res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(third.res.headers['retry-after']).toMatch(/^\d+$/);
    expect(third.res.headers['x-content-type-options']).toBe('nosniff');
    expect(third.res.headers['audit-id']).toBe('audit-1');
    expect(third.res.headers['x-kubernetes-pf-flowschema-uid']).toBe(stableUID('FlowSchema/people'));
    await new Promise((r) => setTimeout(r, 20));
    gate.resolve();
    await Promise.all([running, ...queued]);
    expect(order).toEqual([0, 1]);
    // The wait is kept for apiserver_request_sli_duration_seconds, which leaves it out.
    expect(first.queueWaitSeconds).toBeUndefined();
    expect(waiting[0]!.queueWaitSeconds).toBeGreaterThanOrEqual(0.015);
    const text = await registry.metrics();
    expect(text).toContain('apiserver_flowcontrol_rejected_requests_total{priority_level="people",flow_schema="people",reason="queue-full"} 1');
    expect(text).toMatch(/apiserver_flowcontrol_dispatched_requests_total\{priority_level="people",flow_schema="people"\} \d+/);
    expect(text).toContain('apiserver_flowcontrol_current_executing_requests{priority_level="people",flow_schema="people"} 0');
    expect(text).toContain('apiserver_flowcontrol_current_inqueue_requests{priority_level="people",flow_schema="people"} 0');
    expect(text).toMatch(/apiserver_flowcontrol_request_wait_duration_seconds_count\{priority_level="people",flow_schema="people",execute="true"\} \d+/);
    expect(text).toMatch(/apiserver_flowcontrol_request_wait_duration_seconds_count\{priority_level="people",flow_schema="people",execute="false"\} 1/);
    expect(text).toMatch(/apiserver_flowcontrol_request_execution_seconds_count\{priority_level="people",flow_schema="people",type="regular"\} \d+/);
    expect(text).toContain('apiserver_flowcontrol_nominal_limit_seats{priority_level="people"} 1');
  });

  it('times a waiting request out after a quarter of its deadline: 429, reason time-out', async () => {
    const step = flowControlStep(fc);
    const gate = deferred();
    const running = step(ctxFor('GET', '/api/v1/pods', bob), () => gate.p);
    const late = ctxFor('GET', '/api/v1/pods', bob, 200);
    const started = Date.now();
    await step(late, async () => {
      throw new Error('must not run');
    });
    const waited = Date.now() - started;
    expect(late.res.status).toBe(429);
    expect(waited).toBeGreaterThanOrEqual(40);
    expect(waited).toBeLessThan(1000);
    gate.resolve();
    await running;
    expect(await registry.metrics()).toContain('apiserver_flowcontrol_rejected_requests_total{priority_level="people",flow_schema="people",reason="time-out"} 1');
  });

  it('counts a request turned away as the 429 it is, also when its client has already gone', async () => {
    const step = flowControlStep(fc);
    const gate = deferred();
    const running = step(ctxFor('GET', '/api/v1/pods', alice), () => gate.p);
    const queued = [step(ctxFor('GET', '/api/v1/pods', alice), async () => {}), step(ctxFor('GET', '/api/v1/pods', alice), async () => {})];
    await tick();
    const gone = ctxFor('GET', '/api/v1/pods', alice);
    gone.res.hangUp();
    await step(gone, async () => {
      throw new Error('must not run');
    });
    // Nothing can be written, but kube's RecordDroppedRequest counts it as a 429, not as the 200 a response starts with.
    expect(gone.res.status).toBe(0);
    expect((gone.res as unknown as { statusCode: number }).statusCode).toBe(429);
    expect(gone.droppedByFlowControl).toBe(true);
    gate.resolve();
    await Promise.all([running, ...queued]);
  });

  it('drops a waiting request whose client hung up, without answering', async () => {
    const step = flowControlStep(fc);
    const gate = deferred();
    const running = step(ctxFor('GET', '/api/v1/pods', bob), () => gate.p);
    const gone = ctxFor('GET', '/api/v1/pods', bob);
    const p = step(gone, async () => {
      throw new Error('must not run');
    });
    await tick();
    gone.res.hangUp();
    await p;
    expect(gone.res.status).toBe(0);
    // Nothing is written, but the request's metrics count it as kube does: a 429.
    expect((gone.res as unknown as { statusCode: number }).statusCode).toBe(429);
    gate.resolve();
    await running;
    expect(await registry.metrics()).toContain('apiserver_flowcontrol_rejected_requests_total{priority_level="people",flow_schema="people",reason="cancelled"} 1');
  });

  it('never holds system:masters back', async () => {
    const step = flowControlStep(fc);
    const gate = deferred();
    const running = step(ctxFor('GET', '/api/v1/pods', alice), () => gate.p);
    const ctx = ctxFor('DELETE', '/api/v1/namespaces/x', root);
    let ran = false;
    await step(ctx, async () => void (ran = true));
    expect(ran).toBe(true);
    expect(ctx.res.headers['x-kubernetes-pf-prioritylevel-uid']).toBe(stableUID('PriorityLevelConfiguration/exempt'));
    gate.resolve();
    await running;
  });

  it('does not count exec, attach, log or port-forward', async () => {
    const step = flowControlStep(fc);
    const gate = deferred();
    const running = step(ctxFor('GET', '/api/v1/pods', alice), () => gate.p);
    for (const path of ['/api/v1/namespaces/a/pods/p/log?follow=true', '/api/v1/namespaces/a/pods/p/exec?command=sh', '/api/v1/namespaces/a/pods/p/portforward']) {
      const ctx = ctxFor(path.includes('exec') ? 'POST' : 'GET', path, alice);
      let ran = false;
      await step(ctx, async () => void (ran = true));
      expect(ran).toBe(true);
      expect(ctx.res.headers['x-kubernetes-pf-flowschema-uid']).toBeUndefined();
    }
    gate.resolve();
    await running;
  });

  it('counts a watch asked for over WebSocket: refused with the 429 as an HTTP answer on the socket, before any handshake', async () => {
    const step = flowControlStep(fc);
    const gate = deferred();
    const running = step(ctxFor('GET', '/api/v1/pods', alice), () => gate.p);
    const queued = [step(ctxFor('GET', '/api/v1/pods', alice), async () => {}), step(ctxFor('GET', '/api/v1/pods', alice), async () => {})];
    await tick();
    const socket = new PassThrough();
    const u = new URL('https://gw/api/v1/pods?watch=1');
    const req = { method: 'GET', url: u.pathname + u.search, headers: { upgrade: 'websocket', connection: 'Upgrade' } } as unknown as IncomingMessage;
    const ctx = { ...ctxFor('GET', u.href, alice), req, res: new UpgradeResponse(req, socket, Buffer.alloc(0), 'audit-ws') as any, upgrade: { socket, head: Buffer.alloc(0) } } as RequestContext;
    let ran = false;
    await step(ctx, async () => void (ran = true));
    expect(ran).toBe(false);
    const answer = String(socket.read());
    expect(answer).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\n/);
    expect(answer).toContain('\r\nRetry-After: ');
    expect(answer).toContain('\r\nAudit-Id: audit-1\r\n');
    expect(answer).toContain(`\r\nX-Kubernetes-PF-FlowSchema-UID: ${stableUID('FlowSchema/people')}\r\n`);
    expect(answer).toContain('\r\nConnection: close\r\n');
    expect(answer.endsWith('\r\n\r\nToo many requests, please try again later.\n')).toBe(true);
    gate.resolve();
    await Promise.all([running, ...queued]);
  });

  it('frees a watch\'s seat once its initial events are sent, while the watch goes on', async () => {
    const step = flowControlStep(fc);
    const qs = fc.controller.levels.get('people')!.qs!;
    const watchEnds = deferred();
    const watch = ctxFor('GET', '/api/v1/pods?watch=1', alice);
    const served = step(watch, async () => {
      expect(qs.totSeatsInUse).toBe(1);
      markInitialEventsSent(watch);
      markInitialEventsSent(watch);
      expect(qs.totSeatsInUse).toBe(0);
      await watchEnds.p;
    });
    await tick();
    let ran = false;
    await step(ctxFor('GET', '/api/v1/pods', alice), async () => void (ran = true));
    expect(ran).toBe(true);
    watchEnds.resolve();
    await served;
    expect(qs.totSeatsInUse).toBe(0);
    expect(await registry.metrics()).toMatch(/apiserver_flowcontrol_request_execution_seconds_count\{priority_level="people",flow_schema="people",type="watch"\} 1/);
  });

  it('gives a forwarded watch\'s seat back before it streams: through /clusters/<name>, or to the cache service', async () => {
    // An upstream whose watches never end, as a member's or the cache service's do not.
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"type":"ADDED","object":{}}\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const upstream = upstreamFromEndpoint({ name: 'cache-service', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    const g = { cacheService: upstream, config: { server: { maxRequestBodyBytes: 1 << 20 } }, watches: new Set() } as unknown as Gateway;
    const chain = compose([flowControlStep(fc), routingStep(g)]);
    const qs = fc.controller.levels.get('people')!.qs!;
    // One member's watch (any resource), and a fleet watch of pods, which the cache service answers in facade mode.
    const watches = [
      { path: '/apis/apps/v1/namespaces/default/deployments?watch=true', cluster: 'member-a' },
      { path: '/api/v1/pods?watch=true', cluster: undefined },
    ].map(({ path, cluster }) => {
      const ctx = forwardedCtx(path);
      ctx.cluster = cluster;
      return { ctx, done: chain(ctx) };
    });
    try {
      await until(() => watches.every((w) => w.ctx.res.body.length > 0));
      // Both stream, and the one seat people have is free for the next request.
      expect(qs.totSeatsInUse).toBe(0);
      let ran = false;
      await flowControlStep(fc)(ctxFor('GET', '/api/v1/pods', alice), async () => void (ran = true));
      expect(ran).toBe(true);
    } finally {
      for (const w of watches) (w.ctx.req as EventEmitter).emit('close');
      for (const w of watches) w.ctx.res.destroy();
      server.closeAllConnections();
      server.close();
      await Promise.allSettled(watches.map((w) => w.done));
    }
  });

  it('releases the seat when the next step fails', async () => {
    const step = flowControlStep(fc);
    await expect(
      step(ctxFor('GET', '/api/v1/pods', alice), async () => {
        throw new Error('upstream down');
      }),
    ).rejects.toThrow('upstream down');
    expect(fc.controller.levels.get('people')!.qs!.totSeatsInUse).toBe(0);
  });

  it('charges a LIST by the objects the cache will return', async () => {
    const step = flowControlStep(fc, { estimateObjects: () => 450 });
    // Someone outside system:authenticated lands in catch-all, a level with room for wide requests.
    const odd: UserInfo = { username: 'odd', groups: [] };
    const catchAll = fc.controller.levels.get('catch-all')!.qs!;
    await step(ctxFor('GET', '/api/v1/pods', odd), async () => {
      expect(catchAll.totSeatsInUse).toBe(5);
    });
    await step(ctxFor('GET', '/api/v1/namespaces/a/pods/x', odd), async () => {
      expect(catchAll.totSeatsInUse).toBe(1);
    });
    // In a level of one seat the same LIST is capped to it, and still runs.
    await step(ctxFor('GET', '/api/v1/pods', alice), async () => {
      expect(fc.controller.levels.get('people')!.qs!.totSeatsInUse).toBe(1);
    });
    const text = await registry.metrics();
    expect(text).toContain('apiserver_flowcontrol_work_estimated_seats_bucket{le="4",priority_level="catch-all",flow_schema="catch-all"} 1');
    expect(text).toContain('apiserver_flowcontrol_work_estimated_seats_bucket{le="10",priority_level="catch-all",flow_schema="catch-all"} 2');
  });
});
