// The configuration in force and the decisions made with it (k8s.io/apiserver/pkg/util/flowcontrol/
// apf_controller.go): FlowSchemas sorted by matching precedence, each priority level's nominal seats carved out of
// the server's concurrency limit, one queue set per limited level, kept across reloads so waiting requests keep
// their places. Borrowing between levels (lendablePercent, borrowingLimitPercent) is not implemented: a level's
// limit is its nominal one.

import type { UserInfo } from '../api/user.js';
import type { RequestInfo } from '../request/requestinfo.js';
import type { FlowControlObjects } from './config.js';
import { flowDistinguisher, hashFlowID, matchesFlowSchema } from './match.js';
import { bindFlowMetrics, type FlowControlMetrics, type FlowMetrics } from './metrics.js';
import {
  cancelWaiting,
  dispatchAsMuchAsPossible,
  finishRequest,
  isIdle,
  newQueueSet,
  reconfigure,
  startRequest,
  whenDecided,
  type Decision,
  type GlobalLimits,
  type QueuedRequest,
  type QueueSet,
  type QueuingConfig,
  type RejectReason,
  type RequestKind,
} from './queueset.js';
import { newDroppedRequestsTracker, type DroppedRequestsTracker } from './retryafter.js';
import { priorityLevelMaxSeats } from './seats.js';
import {
  MANDATORY_FS_CATCH_ALL,
  MANDATORY_FS_EXEMPT,
  MANDATORY_PL_CATCH_ALL,
  MANDATORY_PL_EXEMPT,
  NAME_CATCH_ALL,
  NAME_EXEMPT,
  type DistinguisherMethodType,
  type FlowSchema,
  type PriorityLevelConfiguration,
} from './types.js';
import { withUID } from './config.js';

export interface PriorityLevelState {
  name: string;
  uid: string;
  exempt: boolean;
  nominalCL: number;
  /** The most seats one request of this level may take. */
  maxSeats: number;
  queuing: QueuingConfig;
  /** Undefined for the exempt level, which never waits. */
  qs: QueueSet | undefined;
}

export interface FlowState {
  name: string;
  uid: string;
  matchingPrecedence: number;
  schema: FlowSchema;
  pl: PriorityLevelState;
  distinguisher: DistinguisherMethodType | undefined;
  metrics: FlowMetrics;
  /** Flow hashes by distinguisher: a sha256 per request would be waste, the set of users is small. */
  hashes: Map<string, bigint>;
}

export interface Classification {
  flow: FlowState;
  hash: bigint;
}

export interface Ticket {
  flow: FlowState;
  seats: number;
  kind: RequestKind;
  isWatch: boolean;
  /** Undefined for exempt requests. */
  req: QueuedRequest | undefined;
  arrival: number;
  executeStart: number;
  released: boolean;
}

export interface ControllerOptions {
  /** --max-requests-inflight: read-only requests executing at once (0: no separate cap). */
  maxRequestsInflight: number;
  /** --max-mutating-requests-inflight: mutating requests executing at once (0: no separate cap). */
  maxMutatingRequestsInflight: number;
  metrics: FlowControlMetrics;
  now?: () => number;
}

export interface Controller {
  readonly serverConcurrencyLimit: number;
  readonly global: GlobalLimits;
  readonly retryAfter: DroppedRequestsTracker;
  flows: FlowState[];
  levels: Map<string, PriorityLevelState>;
  /** Queue sets of levels no longer configured that still hold requests. */
  draining: QueueSet[];
  metrics: FlowControlMetrics;
  now: () => number;
}

const HASH_CACHE_LIMIT = 4096;
const NON_MUTATING_VERBS = new Set(['get', 'list', 'watch']);

export function requestKind(verb: string): RequestKind {
  return NON_MUTATING_VERBS.has(verb) ? 'readOnly' : 'mutating';
}

export function newController(o: ControllerOptions, objs: FlowControlObjects): Controller {
  const ctl: Controller = {
    serverConcurrencyLimit: o.maxRequestsInflight + o.maxMutatingRequestsInflight,
    global: {
      readOnly: { limit: o.maxRequestsInflight > 0 ? o.maxRequestsInflight : Infinity, inUse: 0 },
      mutating: { limit: o.maxMutatingRequestsInflight > 0 ? o.maxMutatingRequestsInflight : Infinity, inUse: 0 },
    },
    retryAfter: newDroppedRequestsTracker(),
    flows: [],
    levels: new Map(),
    draining: [],
    metrics: o.metrics,
    now: o.now ?? performance.now.bind(performance),
  };
  applyConfig(ctl, objs);
  return ctl;
}

function nominalShares(pl: PriorityLevelConfiguration): number {
  return (pl.spec.type === 'Exempt' ? pl.spec.exempt?.nominalConcurrencyShares : pl.spec.limited?.nominalConcurrencyShares) ?? 0;
}

function queuingOf(pl: PriorityLevelConfiguration): QueuingConfig {
  const q = pl.spec.limited?.limitResponse.type === 'Queue' ? pl.spec.limited.limitResponse.queuing : undefined;
  return q ? { queues: q.queues!, handSize: q.handSize!, queueLengthLimit: q.queueLengthLimit! } : { queues: 0, handSize: 0, queueLengthLimit: 0 };
}

/**
 * Puts a validated set of objects in force; the mandatory exempt and catch-all objects are supplied when absent,
 * and FlowSchemas naming a missing priority level are left out. Returns those dangling schemas' names.
 */
export function applyConfig(ctl: Controller, objs: FlowControlObjects): string[] {
  const pls = new Map<string, PriorityLevelConfiguration>();
  for (const pl of objs.priorityLevels) pls.set(pl.metadata.name, pl);
  if (!pls.has(NAME_EXEMPT)) pls.set(NAME_EXEMPT, withUID(MANDATORY_PL_EXEMPT));
  if (!pls.has(NAME_CATCH_ALL)) pls.set(NAME_CATCH_ALL, withUID(MANDATORY_PL_CATCH_ALL));

  let shareSum = 0;
  for (const pl of pls.values()) shareSum += nominalShares(pl);
  const levels = new Map<string, PriorityLevelState>();
  for (const [name, pl] of pls) {
    const nominalCL = shareSum > 0 ? Math.ceil((ctl.serverConcurrencyLimit * nominalShares(pl)) / shareSum) : 0;
    const exempt = pl.spec.type === 'Exempt';
    const queuing = queuingOf(pl);
    const old = ctl.levels.get(name);
    let qs: QueueSet | undefined;
    if (!exempt) {
      qs = old?.qs;
      if (qs) reconfigure(qs, queuing, nominalCL);
      else qs = newQueueSet(name, queuing, nominalCL, ctl.global, ctl.now);
    }
    levels.set(name, { name, uid: pl.metadata.uid!, exempt, nominalCL, maxSeats: priorityLevelMaxSeats(nominalCL, queuing.handSize || undefined), queuing, qs });
    ctl.metrics.nominalLimitSeats.labels(name).set(nominalCL);
    ctl.metrics.currentLimitSeats.labels(name).set(nominalCL);
  }
  for (const [name, old] of ctl.levels) {
    if (levels.has(name)) continue;
    ctl.metrics.nominalLimitSeats.remove(name);
    ctl.metrics.currentLimitSeats.remove(name);
    if (old.qs && !isIdle(old.qs)) ctl.draining.push(old.qs);
  }
  ctl.draining = ctl.draining.filter((qs) => !isIdle(qs));

  const dangling: string[] = [];
  const schemas = objs.flowSchemas.filter((fs) => {
    if (levels.has(fs.spec.priorityLevelConfiguration.name)) return true;
    dangling.push(fs.metadata.name);
    return false;
  });
  if (!schemas.some((fs) => fs.metadata.name === NAME_EXEMPT)) schemas.push(withUID(MANDATORY_FS_EXEMPT));
  if (!schemas.some((fs) => fs.metadata.name === NAME_CATCH_ALL)) schemas.push(withUID(MANDATORY_FS_CATCH_ALL));
  schemas.sort((a, b) => a.spec.matchingPrecedence! - b.spec.matchingPrecedence! || (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  ctl.flows = schemas.map((fs) => {
    const pl = levels.get(fs.spec.priorityLevelConfiguration.name)!;
    return {
      name: fs.metadata.name,
      uid: fs.metadata.uid!,
      matchingPrecedence: fs.spec.matchingPrecedence!,
      schema: fs,
      pl,
      distinguisher: fs.spec.distinguisherMethod?.type,
      metrics: bindFlowMetrics(ctl.metrics, pl.name, fs.metadata.name, () => ctl.retryAfter.record(pl.name)),
      hashes: new Map(),
    };
  });
  ctl.levels = levels;
  return dangling;
}

/** The first FlowSchema (in precedence order) the request matches; catch-all if, against the odds, none does. */
export function classify(ctl: Controller, info: RequestInfo, user: UserInfo): Classification {
  let flow: FlowState | undefined;
  for (const f of ctl.flows) {
    if (matchesFlowSchema(info, user, f.schema)) {
      flow = f;
      break;
    }
  }
  flow ??= ctl.flows.find((f) => f.name === NAME_CATCH_ALL)!;
  let hash = 0n;
  if (flow.pl.queuing.queues > 1) {
    const d = flowDistinguisher(info, user, flow.distinguisher);
    let h = flow.hashes.get(d);
    if (h === undefined) {
      if (flow.hashes.size >= HASH_CACHE_LIMIT) flow.hashes.clear();
      flow.hashes.set(d, (h = hashFlowID(flow.name, d)));
    }
    hash = h;
  }
  return { flow, hash };
}

/**
 * Admits a classified request: a Ticket (executing, or waiting: see decided()) or the reason it was turned away.
 * Every Ticket must be released exactly once it is done (release is idempotent).
 */
export function begin(ctl: Controller, c: Classification, seats: number, kind: RequestKind, isWatch: boolean, waitLimitMs: number): Ticket | RejectReason {
  const flow = c.flow;
  const arrival = ctl.now();
  const t: Ticket = { flow, seats, kind, isWatch, req: undefined, arrival, executeStart: 0, released: false };
  const qs = flow.pl.qs;
  if (!qs) {
    flow.metrics.executing(1, seats);
    markExecuting(ctl, t, false);
    return t;
  }
  flow.metrics.estimatedSeats.observe(seats);
  const r = startRequest(qs, flow.metrics, seats, kind, c.hash, waitLimitMs);
  if (typeof r === 'string') {
    flow.metrics.waitRejected.observe((ctl.now() - arrival) / 1000);
    return r;
  }
  t.req = r;
  if (r.state === 'executing') markExecuting(ctl, t, true);
  return t;
}

export function isWaiting(t: Ticket): boolean {
  return t.req !== undefined && t.req.state === 'waiting';
}

/** For a waiting ticket: how its wait ends. 'execute' means it now holds its seats. */
export function decided(ctl: Controller, t: Ticket): Promise<Decision> {
  return new Promise((resolve) => {
    whenDecided(t.req!, (d) => {
      if (d === 'execute') markExecuting(ctl, t, true);
      else t.flow.metrics.waitEnqueued.observe((ctl.now() - t.arrival) / 1000);
      resolve(d);
    });
  });
}

/** The client gave up while the ticket waited. */
export function cancel(t: Ticket): void {
  if (t.req) cancelWaiting(t.req);
}

function markExecuting(ctl: Controller, t: Ticket, waited: boolean): void {
  t.executeStart = ctl.now();
  if (waited) t.flow.metrics.waitEnqueued.observe((t.executeStart - t.arrival) / 1000);
  t.flow.metrics.dispatched.inc();
}

/** Frees the ticket's seats (a watch: once its initial events are out; anything else: when it is done). */
export function release(ctl: Controller, t: Ticket): void {
  if (t.released) return;
  t.released = true;
  const req = t.req;
  if (req && req.state !== 'executing') return;
  (t.isWatch ? t.flow.metrics.execWatch : t.flow.metrics.execRegular).observe((ctl.now() - t.executeStart) / 1000);
  if (!req) {
    t.flow.metrics.executing(-1, -t.seats);
    return;
  }
  const g = ctl.global[req.kind];
  const wasSaturated = g.inUse >= g.limit;
  finishRequest(req);
  // A freed global slot may be what another level's queues were waiting for.
  if (wasSaturated) {
    for (const pl of ctl.levels.values()) if (pl.qs && pl.qs !== req.qs && pl.qs.totRequestsWaiting > 0) dispatchAsMuchAsPossible(pl.qs);
    for (const qs of ctl.draining) if (qs !== req.qs && qs.totRequestsWaiting > 0) dispatchAsMuchAsPossible(qs);
  }
}
