// One priority level's queues: fair queuing for server requests with virtual time, as kube's queueset does
// (k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset). R, the progress meter, advances in seat-seconds
// per queue at the rate min(seats wanted, concurrency limit) / active queues. A request's virtual finish is its
// queue's next dispatch R plus its work (seats x 3ms, the estimated service time); the queue whose head would
// finish first is served next, and when a request ends its queue is credited or charged for how long it really
// took. That is what makes a queue of expensive LISTs yield to a queue of cheap GETs.
//
// fleetgate adds kube's two in-flight flags as gateway-wide caps on executing requests by kind (read-only,
// mutating) on top of the level's seats: a queue whose head is of a capped kind is passed over until a slot frees.
//
// Differences from kube, all documented: no borrowing between levels (the limit is the nominal one); a request
// waits with its own timer instead of being timed out lazily when the next request arrives; R is a float (no
// epochs); excess queues left after a config change drain and are dropped from the end; and backfill (below).
//
// Backfill. kube dispatches nothing while the request whose turn it is does not fit, so that wide requests are not
// starved by narrow ones. But R advances at min(seats wanted, limit) / active queues, seats a flow of wide LISTs
// cannot use (9 left free under 10-seat LISTs) included, so such a flow is soon "owed" service, its head keeps the
// turn, and another flow's 1-seat GET waits behind it until a LIST ends: seconds, at the p99 and beyond of
// scenario 7 (the victim's max 2.3 s; with no LIST left waiting, 22 ms). Here a request of another queue may take
// seats the blocked head leaves idle when it fits in them and the widest executing request alone, once it ends,
// frees enough for the head even with the backfilled seats still taken: the head then starts no later than it
// could have started without the backfill through that request's end. Narrow requests cannot hold a wide head
// off for ever: when only narrow requests execute, nothing is backfilled and seats gather for the head as kube's
// rule gathers them.

import { dealIntoHand } from './shufflesharding.js';

/** kube's estimatedServiceDuration: the work a request is assumed to take per seat before it has run. */
const ESTIMATED_SERVICE_SECONDS = 0.003;

export type RejectReason = 'queue-full' | 'concurrency-limit' | 'time-out' | 'cancelled';
export type RequestKind = 'readOnly' | 'mutating';

/** Per flow schema (and its level) metric handles, bound once per configuration so requests allocate nothing. */
export interface FlowHooks {
  /** delta requests and seats entering (+) or leaving (-) the queues. */
  queued(delta: number, seats: number): void;
  /** delta requests and seats starting (+) or ending (-) execution. */
  executing(delta: number, seats: number): void;
  queueLength(length: number): void;
  rejected(reason: RejectReason): void;
}

/** The gateway-wide caps on executing requests by kind (--max-requests-inflight, --max-mutating-requests-inflight). */
export interface GlobalLimits {
  readOnly: { limit: number; inUse: number };
  mutating: { limit: number; inUse: number };
}

export interface QueuingConfig {
  /** 0: the level rejects instead of queuing (limitResponse Reject). */
  queues: number;
  handSize: number;
  queueLengthLimit: number;
}

interface Queue {
  waiting: QueuedRequest[];
  /** Sum of the seats of the waiting requests. */
  waitingSeats: number;
  executing: number;
  seatsInUse: number;
  /** R at which the queue's next request is (virtually) dispatched. */
  nextDispatchR: number;
}

export type Decision = 'execute' | 'time-out' | 'cancelled';

export interface QueuedRequest {
  readonly qs: QueueSet;
  readonly flow: FlowHooks;
  readonly seats: number;
  readonly kind: RequestKind;
  queue: Queue | undefined;
  arrivalR: number;
  /** ms (the queue set's clock) the request started executing. */
  startTime: number;
  state: 'waiting' | 'executing' | 'finished' | 'rejected';
  /** How the wait ended, once it has. */
  decision: Decision | undefined;
  timer: NodeJS.Timeout | undefined;
  onDecision: ((d: Decision) => void) | undefined;
}

export interface QueueSet {
  name: string;
  cfg: QueuingConfig;
  concurrencyLimit: number;
  queues: Queue[];
  global: GlobalLimits;
  now: () => number;
  /** R in seat-seconds, and the clock reading (ms) it was last advanced at. */
  currentR: number;
  lastRealTime: number;
  robinIndex: number;
  enqueues: number;
  totRequestsWaiting: number;
  totRequestsExecuting: number;
  totSeatsInUse: number;
  /**
   * Queues with a request waiting or executing, and the seats those requests hold or ask for: the rate R advances
   * at. Kept as requests come and go instead of summed over every queue (128 a level by default) twice a request.
   */
  activeQueues: number;
  seatsRequested: number;
  /** Executing requests by width (seats -> count): backfill asks for the widest. */
  executingWidths: Map<number, number>;
  hand: number[];
}

export function newQueueSet(name: string, cfg: QueuingConfig, concurrencyLimit: number, global: GlobalLimits, now: () => number = performance.now.bind(performance)): QueueSet {
  const qs: QueueSet = {
    name,
    cfg,
    concurrencyLimit,
    queues: [],
    global,
    now,
    currentR: 0,
    lastRealTime: now(),
    robinIndex: -1,
    enqueues: 0,
    totRequestsWaiting: 0,
    totRequestsExecuting: 0,
    totSeatsInUse: 0,
    activeQueues: 0,
    seatsRequested: 0,
    executingWidths: new Map(),
    hand: [],
  };
  addQueues(qs, cfg.queues);
  return qs;
}

function addQueues(qs: QueueSet, upTo: number): void {
  while (qs.queues.length < upTo) qs.queues.push({ waiting: [], waitingSeats: 0, executing: 0, seatsInUse: 0, nextDispatchR: 0 });
}

/** A new configuration for a live queue set: queues are added now, surplus ones drain first. */
export function reconfigure(qs: QueueSet, cfg: QueuingConfig, concurrencyLimit: number): void {
  syncTime(qs);
  qs.cfg = cfg;
  qs.concurrencyLimit = concurrencyLimit;
  addQueues(qs, cfg.queues);
  dropDrainedQueues(qs);
  dispatchAsMuchAsPossible(qs);
}

export function isIdle(qs: QueueSet): boolean {
  return qs.totRequestsWaiting === 0 && qs.totRequestsExecuting === 0;
}

/**
 * Admits a request: it is executing, waiting (call whenDecided), or rejected (the reason). waitLimitMs bounds
 * the time it may wait in its queue.
 */
export function startRequest(qs: QueueSet, flow: FlowHooks, seats: number, kind: RequestKind, hash: bigint, waitLimitMs: number): QueuedRequest | RejectReason {
  syncTime(qs);
  const req: QueuedRequest = {
    qs,
    flow,
    seats,
    kind,
    queue: undefined,
    arrivalR: qs.currentR,
    startTime: 0,
    state: 'waiting',
    decision: undefined,
    timer: undefined,
    onDecision: undefined,
  };
  if (qs.cfg.queues < 1) {
    if (!canAccommodate(qs, seats, kind)) {
      flow.rejected('concurrency-limit');
      return 'concurrency-limit';
    }
    beginExecution(qs, req);
    return req;
  }
  const index = shuffleShard(qs, hash);
  const queue = qs.queues[index]!;
  if (qs.totSeatsInUse >= qs.concurrencyLimit && queue.waiting.length >= qs.cfg.queueLengthLimit) {
    flow.rejected('queue-full');
    return 'queue-full';
  }
  if (queue.waiting.length === 0 && queue.executing === 0) {
    queue.nextDispatchR = qs.currentR;
    qs.activeQueues++;
  }
  req.queue = queue;
  queue.waiting.push(req);
  queue.waitingSeats += seats;
  qs.seatsRequested += seats;
  qs.totRequestsWaiting++;
  flow.queued(1, seats);
  flow.queueLength(queue.waiting.length);
  boundNextDispatch(queue);
  if (qs.totRequestsWaiting === 1) {
    // The only request waiting is this one: dispatchOne's scan of every queue would find its queue alone, under
    // the same two conditions as the loop and the scan.
    if (hasFreeSeat(qs) && !atGlobalCap(qs, kind)) dispatchHead(qs, queue, index);
  } else {
    dispatchAsMuchAsPossible(qs);
  }
  if (req.state === 'waiting') {
    req.timer = setTimeout(() => leaveQueue(req, 'time-out'), Math.max(0, waitLimitMs));
    req.timer.unref?.();
  }
  return req;
}

/** Calls fn once with the request's fate; at once when it has already been decided. */
export function whenDecided(req: QueuedRequest, fn: (d: Decision) => void): void {
  if (req.decision === undefined) req.onDecision = fn;
  else fn(req.decision);
}

/** The client went away while the request waited. */
export function cancelWaiting(req: QueuedRequest): void {
  if (req.state === 'waiting') leaveQueue(req, 'cancelled');
}

/** The request is done executing (or, for a watch, done sending its initial events): its seats are free. */
export function finishRequest(req: QueuedRequest): void {
  if (req.state !== 'executing') return;
  const qs = req.qs;
  syncTime(qs);
  req.state = 'finished';
  qs.totRequestsExecuting--;
  qs.totSeatsInUse -= req.seats;
  const n = qs.executingWidths.get(req.seats)! - 1;
  if (n === 0) qs.executingWidths.delete(req.seats);
  else qs.executingWidths.set(req.seats, n);
  qs.global[req.kind].inUse--;
  req.flow.executing(-1, -req.seats);
  const q = req.queue;
  if (q) {
    q.executing--;
    q.seatsInUse -= req.seats;
    qs.seatsRequested -= req.seats;
    if (q.executing === 0 && q.waiting.length === 0) qs.activeQueues--;
    // Charge (or credit) the queue for the real service time instead of the estimate it was dispatched with.
    const actual = (qs.now() - req.startTime) / 1000;
    q.nextDispatchR += req.seats * (actual - ESTIMATED_SERVICE_SECONDS);
    boundNextDispatch(q);
    dropDrainedQueues(qs);
  }
  dispatchAsMuchAsPossible(qs);
}

function leaveQueue(req: QueuedRequest, reason: 'time-out' | 'cancelled'): void {
  const q = req.queue!;
  const qs = req.qs;
  syncTime(qs);
  const i = q.waiting.indexOf(req);
  if (i >= 0) q.waiting.splice(i, 1);
  q.waitingSeats -= req.seats;
  qs.seatsRequested -= req.seats;
  if (q.executing === 0 && q.waiting.length === 0) qs.activeQueues--;
  qs.totRequestsWaiting--;
  if (req.timer) clearTimeout(req.timer);
  req.state = 'rejected';
  req.decision = reason;
  req.flow.queued(-1, -req.seats);
  req.flow.rejected(reason);
  boundNextDispatch(q);
  dropDrainedQueues(qs);
  const fn = req.onDecision;
  req.onDecision = undefined;
  fn?.(reason);
}

/** Advances R by the rate the queues have been served at since the last change. */
function syncTime(qs: QueueSet): void {
  const now = qs.now();
  const dt = (now - qs.lastRealTime) / 1000;
  qs.lastRealTime = now;
  if (dt <= 0 || qs.activeQueues === 0) return;
  qs.currentR += (Math.min(qs.seatsRequested, qs.concurrencyLimit) / qs.activeQueues) * dt;
}

/** The least loaded queue (by waiting work) of the flow's hand, starting the scan at a rotating offset. */
function shuffleShard(qs: QueueSet, hash: bigint): number {
  const hand = dealIntoHand(hash, qs.cfg.queues, qs.cfg.handSize, qs.hand);
  const n = hand.length;
  const offset = qs.enqueues % n;
  qs.enqueues++;
  let best = -1;
  let min = Infinity;
  for (let i = 0; i < n; i++) {
    const idx = hand[(offset + i) % n]!;
    const w = qs.queues[idx]!.waitingSeats;
    if (w < min) {
      min = w;
      best = idx;
    }
  }
  return best;
}

/** The level has a seat left: dispatching may go on. */
function hasFreeSeat(qs: QueueSet): boolean {
  return qs.totSeatsInUse < qs.concurrencyLimit;
}

/** Requests of this kind hold every gateway-wide slot: none of them can start, whatever its turn. */
function atGlobalCap(qs: QueueSet, kind: RequestKind): boolean {
  const g = qs.global[kind];
  return g.inUse >= g.limit;
}

function canAccommodate(qs: QueueSet, seats: number, kind: RequestKind): boolean {
  if (atGlobalCap(qs, kind)) return false;
  // A request wider than the whole level runs alone rather than never.
  if (seats > qs.concurrencyLimit) return qs.totRequestsExecuting === 0;
  return qs.totSeatsInUse + seats <= qs.concurrencyLimit;
}

function beginExecution(qs: QueueSet, req: QueuedRequest): void {
  req.state = 'executing';
  req.decision = 'execute';
  req.startTime = qs.now();
  qs.totRequestsExecuting++;
  qs.totSeatsInUse += req.seats;
  qs.executingWidths.set(req.seats, (qs.executingWidths.get(req.seats) ?? 0) + 1);
  qs.global[req.kind].inUse++;
  req.flow.executing(1, req.seats);
}

/** Dispatches waiting requests while seats (and global slots) allow; also call it when a global slot frees. */
export function dispatchAsMuchAsPossible(qs: QueueSet): void {
  while (qs.totRequestsWaiting > 0 && hasFreeSeat(qs) && dispatchOne(qs)) {
    // keep going
  }
}

function dispatchOne(qs: QueueSet): boolean {
  // Round robin from the last queue served, so ties go to the queues not chosen last time.
  const nq = qs.queues.length;
  let minFinish = Infinity;
  let minQueue: Queue | undefined;
  let minIndex = -1;
  for (let k = 0; k < nq; k++) {
    qs.robinIndex = (qs.robinIndex + 1) % nq;
    const q = qs.queues[qs.robinIndex]!;
    const head = q.waiting[0];
    // A head whose kind is at its gateway-wide cap cannot go whatever its turn; let the other kind through.
    if (!head || atGlobalCap(qs, head.kind)) continue;
    const finish = q.nextDispatchR + head.seats * ESTIMATED_SERVICE_SECONDS;
    if (finish < minFinish) {
      minFinish = finish;
      minQueue = q;
      minIndex = qs.robinIndex;
    }
  }
  if (!minQueue) return false;
  return dispatchHead(qs, minQueue, minIndex);
}

/** Dispatches the head of q, the queue whose turn it is (or, when that head does not fit, a backfill's). */
function dispatchHead(qs: QueueSet, q: Queue, index: number): boolean {
  let minQueue = q;
  let minIndex = index;
  let req = minQueue.waiting[0]!;
  if (!canAccommodate(qs, req.seats, req.kind)) {
    const b = backfill(qs, minQueue, req.seats);
    if (!b) return false;
    minQueue = b;
    minIndex = qs.queues.indexOf(b);
    req = b.waiting[0]!;
  }
  minQueue.waiting.shift();
  minQueue.waitingSeats -= req.seats;
  qs.totRequestsWaiting--;
  qs.robinIndex = minIndex;
  req.flow.queued(-1, -req.seats);
  if (req.timer) clearTimeout(req.timer);
  beginExecution(qs, req);
  minQueue.executing++;
  minQueue.seatsInUse += req.seats;
  minQueue.nextDispatchR += req.seats * ESTIMATED_SERVICE_SECONDS;
  boundNextDispatch(minQueue);
  const fn = req.onDecision;
  req.onDecision = undefined;
  fn?.('execute');
  return true;
}

/**
 * The queue (not blocked's) whose head may go ahead of blocked's head of blockedSeats, which does not fit: see
 * Backfill at the top. Among those that qualify, the earliest virtual finish, as for the turn itself.
 */
function backfill(qs: QueueSet, blocked: Queue, blockedSeats: number): Queue | undefined {
  if (blockedSeats > qs.concurrencyLimit) return undefined; // it waits to run alone; anything started delays it
  let widest = 0;
  for (const w of qs.executingWidths.keys()) if (w > widest) widest = w;
  const free = qs.concurrencyLimit - qs.totSeatsInUse;
  let best: Queue | undefined;
  let bestFinish = Infinity;
  for (const q of qs.queues) {
    const head = q.waiting[0];
    if (q === blocked || !head || head.seats > free || free - head.seats + widest < blockedSeats) continue;
    if (!canAccommodate(qs, head.seats, head.kind)) continue;
    const finish = q.nextDispatchR + head.seats * ESTIMATED_SERVICE_SECONDS;
    if (finish < bestFinish) {
      bestFinish = finish;
      best = q;
    }
  }
  return best;
}

/** Anti-windup: a queue's virtual dispatch never precedes the arrival of its oldest waiting request. */
function boundNextDispatch(q: Queue): void {
  const head = q.waiting[0];
  if (head && q.nextDispatchR < head.arrivalR) q.nextDispatchR = head.arrivalR;
}

function dropDrainedQueues(qs: QueueSet): void {
  const want = Math.max(qs.cfg.queues, 0);
  while (qs.queues.length > want) {
    const last = qs.queues[qs.queues.length - 1]!;
    if (last.waiting.length > 0 || last.executing > 0) break;
    qs.queues.pop();
  }
  if (qs.robinIndex >= qs.queues.length) qs.robinIndex = qs.queues.length - 1;
}

