// The chain's flow control step, as kube-apiserver's WithPriorityAndFairness filter behaves
// (k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go): every request but exec, attach, log,
// port-forward and proxy is classified, answers carry the classification's UIDs, and the request runs only once
// its priority level has seats for it. A refusal is kube's plain-text 429 with a Retry-After. A watch holds its
// seats only until its initial events are out: whoever serves it calls markInitialEventsSent(ctx).

import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { SYSTEM_ANONYMOUS, SYSTEM_UNAUTHENTICATED, type UserInfo } from '../api/user.js';
import type { Step } from '../server/chain.js';
import type { RequestContext } from '../server/context.js';
import { connectionGone } from '../server/respond.js';
import { defaultFlowControlDir, flowControlDirSignature, loadFlowControlDir, watchFlowControlDir, type DirWatcher } from './config.js';
import {
  applyConfig,
  begin,
  cancel,
  classify,
  decided,
  isWaiting,
  newController,
  release,
  requestKind,
  type Controller,
  type FlowState,
} from './controller.js';
import { newFlowControlMetrics } from './metrics.js';
import { estimateSeats, type EstimateObjects } from './seats.js';
import { HEADER_FLOW_SCHEMA_UID, HEADER_PRIORITY_LEVEL_UID } from './types.js';

export interface FlowControlOptions {
  /** Directory of FlowSchema / PriorityLevelConfiguration YAML files; default: fleetgate's config/flowcontrol. */
  configDir?: string;
  /** Read-only requests executing at once; with the mutating limit, the seats the priority levels share. */
  maxRequestsInflight?: number;
  maxMutatingRequestsInflight?: number;
  /** How often the directory is stat'ed for changes fs.watch missed. */
  reloadIntervalMs?: number;
  /** Where the apiserver_flowcontrol_* metrics are registered. */
  registry: Registry;
  log: Logger;
  /** Clock (ms) for queuing; tests pass a fake one. */
  now?: () => number;
}

export const FLOW_CONTROL_DEFAULTS = {
  maxRequestsInflight: 400,
  maxMutatingRequestsInflight: 200,
  requestWaitLimitMs: 15_000,
  reloadIntervalMs: 10_000,
} as const;

/** kube's hard cap on queue waits, whatever the request's deadline. */
const MAX_WAIT_MS = 60_000;
const TOO_MANY_REQUESTS = 'Too many requests, please try again later.\n';
/** Authentication runs first and always sets a user; this only guards a chain assembled without it. */
const ANONYMOUS: UserInfo = { username: SYSTEM_ANONYMOUS, groups: [SYSTEM_UNAUTHENTICATED] };

export interface FlowControl {
  readonly controller: Controller;
  readonly configDir: string;
  /** Re-reads the directory; false (and the last good set stays) when it is invalid. */
  reload(): Promise<boolean>;
  close(): void;
}

/** Loads the directory (an invalid one is an error: the gateway should not start misconfigured) and watches it. */
export async function newFlowControl(o: FlowControlOptions): Promise<FlowControl> {
  const configDir = o.configDir ?? defaultFlowControlDir();
  // Taken before the load: a file changed while the directory is read is read again.
  const initialSignature = await flowControlDirSignature(configDir).catch(() => undefined);
  const objs = await loadFlowControlDir(configDir).catch((e: Error) => {
    throw new Error(`flow control configuration in ${configDir} is invalid:\n${e.message}`);
  });
  const controller = newController(
    {
      maxRequestsInflight: o.maxRequestsInflight ?? FLOW_CONTROL_DEFAULTS.maxRequestsInflight,
      maxMutatingRequestsInflight: o.maxMutatingRequestsInflight ?? FLOW_CONTROL_DEFAULTS.maxMutatingRequestsInflight,
      metrics: newFlowControlMetrics(o.registry),
      now: o.now,
    },
    objs,
  );
  const log = o.log.child({ component: 'flowcontrol' });
  const summary = () => ({ flowSchemas: controller.flows.length, priorityLevels: controller.levels.size });
  log.info({ dir: configDir, ...summary() }, 'flow control configuration loaded');

  const reload = async (): Promise<boolean> => {
    let next;
    try {
      next = await loadFlowControlDir(configDir);
    } catch (e) {
      log.error({ dir: configDir, err: (e as Error).message }, 'flow control configuration rejected; keeping the last good one');
      return false;
    }
    const dangling = applyConfig(controller, next);
    if (dangling.length) log.warn({ flowSchemas: dangling }, 'flow schemas ignored: their priority level does not exist');
    log.info({ dir: configDir, ...summary() }, 'flow control configuration reloaded');
    return true;
  };
  const watcher: DirWatcher = watchFlowControlDir(
    configDir,
    o.reloadIntervalMs ?? FLOW_CONTROL_DEFAULTS.reloadIntervalMs,
    async () => {
      await reload();
    },
    (e) => log.warn({ dir: configDir, err: (e as Error).message }, 'watching the flow control configuration'),
    initialSignature,
  );
  return { controller, configDir, reload, close: () => watcher.close() };
}

/** Seat releases of watches still sending their initial events. */
const initialEventsPending = new WeakMap<RequestContext, () => void>();

/**
 * The watch on ctx has sent its initial events (or, forwarded, the upstream has answered): from here on it holds
 * no seats. Safe to call for any request, any number of times.
 */
export function markInitialEventsSent(ctx: RequestContext): void {
  const fn = initialEventsPending.get(ctx);
  if (fn) {
    initialEventsPending.delete(ctx);
    fn();
  }
}

export interface FlowControlStepOptions {
  /** How many objects a LIST will go through, from the cache; a LIST it cannot tell about takes one seat. */
  estimateObjects?: EstimateObjects;
  /** How long a request with no deadline (a watch) may wait in a queue; kube uses the request timeout / 4. */
  requestWaitLimitMs?: number;
}

export function flowControlStep(fc: FlowControl, o: FlowControlStepOptions = {}): Step {
  const ctl = fc.controller;
  const defaultWaitMs = Math.min(o.requestWaitLimitMs ?? FLOW_CONTROL_DEFAULTS.requestWaitLimitMs, MAX_WAIT_MS);
  return async (ctx, next) => {
    const info = ctx.info;
    const isWatch = info.verb === 'watch';
    // Long-running requests other than watches (exec, attach, log, port-forward, proxy) are not counted. A watch
    // asked for over WebSocket is, as in kube: its 429 is an HTTP answer on the socket (src/server/websocket.ts),
    // and a tunnelled one gives its seats back at routing, as any forwarded watch.
    if (info.longRunning && !isWatch) return next();
    const c = classify(ctl, info, ctx.user ?? ANONYMOUS);
    setClassificationHeaders(ctx, c.flow);
    const seats = c.flow.pl.exempt ? 1 : estimateSeats(ctx, c.flow.pl.maxSeats, o.estimateObjects);
    const waitMs = ctx.deadline === undefined ? defaultWaitMs : Math.min(Math.max(ctx.deadline - Date.now(), 0) / 4, MAX_WAIT_MS);
    const t = begin(ctl, c, seats, requestKind(info.verb), isWatch, waitMs);
    if (typeof t === 'string') return tooManyRequests(ctx, ctl.retryAfter.retryAfter(c.flow.pl.name));
    if (isWaiting(t)) {
      const res = ctx.res;
      const onClose = () => cancel(t);
      res.once('close', onClose);
      if (connectionGone(ctx.res)) cancel(t);
      const d = await decided(ctl, t);
      res.off('close', onClose);
      if (d === 'cancelled') {
        // Nobody is left to answer; kube writes its 429 all the same, and its metrics count the request as one.
        dropped(ctx);
        return;
      }
      if (d !== 'execute') return tooManyRequests(ctx, ctl.retryAfter.retryAfter(c.flow.pl.name));
      ctx.queueWaitSeconds = (t.executeStart - t.arrival) / 1000;
    }
    if (isWatch) initialEventsPending.set(ctx, () => release(ctl, t));
    try {
      await next();
    } finally {
      initialEventsPending.delete(ctx);
      release(ctl, t);
    }
  };
}

/** UIDs, not names: names an operator picks may say more than a client should know (kube's reasoning). */
function setClassificationHeaders(ctx: RequestContext, flow: FlowState): void {
  if (ctx.res.headersSent) return;
  ctx.res.setHeader(HEADER_PRIORITY_LEVEL_UID, flow.pl.uid);
  ctx.res.setHeader(HEADER_FLOW_SCHEMA_UID, flow.uid);
}

/**
 * A request flow control turned away: counted as the 429 it is (in apiserver_request_total only, as kube's
 * RecordDroppedRequest), also when nobody is left to answer.
 */
function dropped(ctx: RequestContext): void {
  ctx.droppedByFlowControl = true;
  if (!ctx.res.headersSent) ctx.res.statusCode = 429;
}

/** kube's tooManyRequests: http.Error's plain text, not a Status, with the level's current Retry-After. */
function tooManyRequests(ctx: RequestContext, retryAfterSeconds: number): void {
  const res = ctx.res;
  dropped(ctx);
  if (res.headersSent || connectionGone(res)) return;
  res.writeHead(429, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-cache, private',
    'Retry-After': String(retryAfterSeconds),
    'Audit-Id': ctx.auditID,
  });
  res.end(TOO_MANY_REQUESTS);
}
