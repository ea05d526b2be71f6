// The member caches at run time: for every member the registry knows, a reflector on its pods and one on its events
// feed the merged cache; a member that changes is re-listed through a new connection (the sink turns the new list
// into the difference), one that goes away leaves the cache (open watches see DELETED for its objects). Sync
// progress goes to the log, to /readyz and to the per-member metrics.

import type { Registry } from 'prom-client';
import { CounterVec, GaugeVec } from '../metrics/vec.js';
import type { Logger } from 'pino';
import type { CachedResource, MergedCache } from '../cache/merged.js';
import { awaitingCollectionBytes } from '../api/offheap.js';
import { collectGarbage } from '../api/gc.js';
import { touchAheadStats } from '../api/touchahead.js';
import { startIntakePool } from '../cache/intakepool.js';
import { tokenBucket } from '../cache/ratelimit.js';
import { startReflector, type Reflector } from '../cache/reflector.js';
import type { StaleMember } from '../cache/serve.js';
import type { MemberConnections, MemberSource } from './connections.js';
import type { MemberCacheStatus } from './member.js';

const RESOURCES: ReadonlyArray<{ resource: CachedResource; path: string }> = [
  { resource: 'pods', path: '/api/v1/pods' },
  { resource: 'events', path: '/api/v1/events' },
];

export interface MemberCachesOptions {
  source: MemberSource;
  connections: MemberConnections;
  cache: MergedCache;
  qps: number;
  burst: number;
  log: Logger;
  registry?: Registry;
  /** Threads that parse and serialize list pages (cache.intakeWorkers); 0 or absent: the main thread does. */
  intakeWorkers?: number;
}

export interface MemberCaches {
  statuses(): MemberCacheStatus[];
  /** Members still on their first list, by name (one that cannot be reached is not counted: /readyz does not wait for it). */
  listing(): string[];
  /**
   * Whether no member is still on its first list (those that cannot be reached are not waited for) and, the first
   * time that is so after anything was listed, the heap was collected once (maybeSettle below). Asked by /readyz, which
   * also starts that collection when it is due.
   */
  ready(): boolean;
  /** How long that collection took (ms), once it has run. */
  readonly postSyncCollectionMs: number | undefined;
  stale(): readonly StaleMember[];
  isStale(name: string): boolean;
  close(): Promise<void>;
}

interface Running {
  reflectors: Reflector[];
  since: number;
  synced: boolean;
}

const NONE_STALE: readonly StaleMember[] = Object.freeze([]);

/** Why the member's first stale reflector is stale, if it says. */
function lastErrorOf(r: Running): string | undefined {
  return r.reflectors.find((x) => x.stale)?.lastError;
}

function runningIsStale(r: Running): boolean {
  if (!r.synced) return true;
  for (const x of r.reflectors) if (x.stale) return true;
  return false;
}

export function startMemberCaches(o: MemberCachesOptions): MemberCaches {
  const running = new Map<string, Running>();
  const metrics = o.registry ? memberMetrics(o.registry) : undefined;
  const workers = o.intakeWorkers ?? 0;
  const pool = workers > 0 ? startIntakePool({ workers, log: o.log, onCrash: () => metrics?.intakeCrashes.inc() }) : undefined;
  const listing = (): string[] =>
    [...running.entries()]
      .filter(([, r]) => !r.synced && !lastErrorOf(r))
      .map(([name]) => name)
      .sort();

  let settled = false;
  let settling = false;
  let collectionMs: number | undefined;
  // The first time nothing is left listing: one full collection, in a turn of its own, before /readyz says ready.
  // A cold sync builds the whole cache in the JS heap (~0.6 GB at a million pods; ~1 GB when this was measured) and
  // leaves the garbage of every page it read. V8 collects it on its own a few seconds later, incrementally: at a
  // million pods that mark took ~0.65 s of wall time, with ~0.2-0.3 s of steps on the main thread and the marking
  // threads on the other cores, and member changes waited behind it for up to a second (scenario 6 at full scale:
  // every watcher that asked for all pods was ended as too slow). Done here, it comes while nothing is yet routed to
  // the gateway, as one pause.
  const maybeSettle = (): void => {
    if (settled || settling) return;
    // The registry's members first (Karmada's are read from the control plane after start), unless reading them
    // failed: then there is nothing to wait for.
    if (o.source.synced === false && !o.source.problems?.().some((p) => p.name === '')) return;
    if (listing().length > 0) return;
    // Nothing listed (no members, or none reachable): nothing to collect.
    if (![...running.values()].some((r) => r.synced)) {
      settled = true;
      return;
    }
    settling = true;
    setImmediate(() => {
      const ms = collectGarbage();
      collectionMs = ms;
      settled = true;
      o.log.info({ ms: Math.round(ms), heapUsedBytes: process.memoryUsage().heapUsed }, 'member caches listed; heap collected once before ready');
    });
  };

  const start = (name: string): void => {
    const conn = o.connections.get(name);
    if (!conn) {
      o.log.warn({ member: name, problem: o.connections.problem(name) }, 'member cluster cannot be cached');
      return;
    }
    // One budget per member for the gateway's own traffic, shared by its reflectors.
    const limiter = tokenBucket(o.qps, o.burst);
    const state: Running = { reflectors: [], since: Date.now(), synced: false };
    const onStatus = () => {
      const synced = state.reflectors.length === RESOURCES.length && state.reflectors.every((r) => r.synced);
      if (synced !== state.synced) {
        state.synced = synced;
        state.since = Date.now();
        const counts = o.cache.objectCounts(name);
        if (synced) o.log.info({ member: name, pods: counts.pods, events: counts.events }, 'member cache synced');
      }
      const stale = state.reflectors.find((r) => r.stale);
      if (stale) o.log.warn({ member: name, error: stale.lastError }, 'member cache is stale');
      maybeSettle();
    };
    for (const { resource, path } of RESOURCES) {
      const sink = o.cache.sink(name, resource);
      state.reflectors.push(
        startReflector({
          upstream: conn.upstream,
          path,
          sink,
          // Pages are read as bytes (intake.ts encodeListBytes): in intake workers, or here at once.
          ...(pool ? { encode: (page: Buffer) => pool.encode(page, sink.transform) } : { encodeNow: (page: Buffer) => sink.encodePage(page) }),
          limiter,
          log: o.log.child({ member: name, resource }),
          onStatus,
        }),
      );
    }
    running.set(name, state);
    o.log.info({ member: name, source: conn.spec.source }, 'caching member cluster');
  };

  const stop = async (name: string): Promise<void> => {
    const r = running.get(name);
    if (!r) return;
    running.delete(name);
    await Promise.all(r.reflectors.map((x) => x.stop()));
  };

  for (const spec of o.source.list()) start(spec.name);
  maybeSettle();
  const unsubscribe = o.source.subscribe((ev) => {
    const name = ev.spec.name;
    if (ev.type === 'added') start(name);
    else if (ev.type === 'changed') void stop(name).then(() => start(name));
    else {
      void stop(name).then(() => o.cache.removeCluster(name));
      o.log.info({ member: name }, 'member cluster removed from the cache');
    }
  });

  const statuses = (): MemberCacheStatus[] =>
    [...running.entries()]
      .map(([name, r]) => {
        const counts = o.cache.objectCounts(name);
        const staleOne = r.reflectors.find((x) => x.stale);
        return {
          name,
          synced: r.synced,
          since: r.since,
          objects: { pods: counts.pods, events: counts.events },
          stale: !!staleOne || !r.synced,
          ...(staleOne?.lastError ? { lastError: staleOne.lastError } : {}),
        };
      })
      .sort((a, b) => (a.name < b.name ? -1 : 1));

  if (metrics) {
    metrics.collect = () => {
      // Gauges describe the members there are now: a removed member's series go away.
      for (const g of [metrics.objects, metrics.synced, metrics.stale, metrics.lastSync, metrics.lag]) g.reset();
      for (const [resource, store] of [['pods', o.cache.pods], ['events', o.cache.events], ['events.events.k8s.io', o.cache.eventsV1]] as const) {
        const a = store.arena.stats();
        metrics.slabBytes.set({ resource }, a.slabBytes);
        metrics.liveBytes.set({ resource }, a.liveBytes);
      }
      metrics.awaitingCollection.set(awaitingCollectionBytes());
      const t = touchAheadStats();
      metrics.touchAheadHeld.set(t.heldBytes);
      for (const outcome of ['taken', 'missed'] as const) {
        metrics.touchAhead.inc({ outcome }, t[outcome] - metrics.touchAheadSeen[outcome]);
        metrics.touchAheadSeen[outcome] = t[outcome];
      }
      for (const [name, r] of running) {
        const counts = o.cache.objectCounts(name);
        for (const res of RESOURCES) metrics.objects.set({ cluster: name, resource: res.resource }, counts[res.resource]);
        metrics.synced.set({ cluster: name }, r.synced ? 1 : 0);
        metrics.stale.set({ cluster: name }, r.reflectors.some((x) => x.stale) ? 1 : 0);
        const last = Math.max(...r.reflectors.map((x) => x.lastSyncedAt ?? 0));
        if (last) metrics.lastSync.set({ cluster: name }, last / 1000);
        for (const [i, x] of r.reflectors.entries()) {
          const labels = { cluster: name, resource: RESOURCES[i]!.resource };
          // The reflectors keep running totals; the counters advance by what is new since the last scrape.
          const seen = metrics.seen.get(x) ?? { events: 0, watchRestarts: 0, relists: 0 };
          metrics.events.inc(labels, x.stats.events - seen.events);
          metrics.watchRestarts.inc(labels, x.stats.watchRestarts - seen.watchRestarts);
          metrics.relists.inc(labels, x.stats.relists - seen.relists);
          metrics.seen.set(x, { events: x.stats.events, watchRestarts: x.stats.watchRestarts, relists: x.stats.relists });
          if (x.stats.lastEventAt) metrics.lag.set(labels, (Date.now() - x.stats.lastEventAt) / 1000);
        }
      }
    };
  }

  return {
    statuses,
    listing,
    ready() {
      maybeSettle();
      return settled;
    },
    get postSyncCollectionMs() {
      return collectionMs;
    },
    // Asked by every read served from the cache (for its Warnings): one pass over the members, no counts, and
    // nothing allocated while all are in sync.
    stale() {
      let out: StaleMember[] | undefined;
      for (const [name, r] of running) {
        if (!runningIsStale(r)) continue;
        let since = Infinity;
        for (const x of r.reflectors) since = Math.min(since, x.staleSince ?? r.since);
        (out ??= []).push({ cluster: name, since });
      }
      return out ? out.sort((a, b) => (a.cluster < b.cluster ? -1 : 1)) : NONE_STALE;
    },
    isStale(name) {
      const r = running.get(name);
      return !r || runningIsStale(r);
    },
    async close() {
      unsubscribe();
      await Promise.all([...running.keys()].map(stop));
      await pool?.close();
    },
  };
}

/** Per-member cache metrics (fleetgate_member_*), refreshed when scraped. */
function memberMetrics(registry: Registry) {
  let refresh: () => void = () => {};
  const m = {
    set collect(f: () => void) {
      refresh = f;
    },
    objects: new GaugeVec({
      name: 'fleetgate_member_cached_objects',
      help: 'Objects cached from each member cluster.',
      labelNames: ['cluster', 'resource'],
      registers: [registry],
      collect: (): void => refresh(),
    }),
    synced: new GaugeVec({ name: 'fleetgate_member_cache_synced', help: '1 while every resource of the member cluster is listed and watched.', labelNames: ['cluster'], registers: [registry] }),
    stale: new GaugeVec({
      name: 'fleetgate_member_cache_stale',
      help: '1 while the member cluster cannot be watched: its cached objects are served as they were last seen, with a Warning.',
      labelNames: ['cluster'],
      registers: [registry],
    }),
    lastSync: new GaugeVec({ name: 'fleetgate_member_last_sync_timestamp_seconds', help: 'When the member cluster last delivered a complete list.', labelNames: ['cluster'], registers: [registry] }),
    seen: new WeakMap<Reflector, { events: number; watchRestarts: number; relists: number }>(),
    events: new CounterVec({ name: 'fleetgate_member_watch_events_total', help: 'Watch events received from the member cluster.', labelNames: ['cluster', 'resource'], registers: [registry] }),
    watchRestarts: new CounterVec({ name: 'fleetgate_member_watch_restarts_total', help: 'Watches of the member cluster restarted.', labelNames: ['cluster', 'resource'], registers: [registry] }),
    relists: new CounterVec({ name: 'fleetgate_member_relists_total', help: 'Relists of the member cluster (after 410 or errors).', labelNames: ['cluster', 'resource'], registers: [registry] }),
    intakeCrashes: new CounterVec({
      name: 'fleetgate_member_intake_worker_crashes_total',
      help: 'Intake workers (cache.intakeWorkers) that died; the lists they were parsing are listed again.',
      registers: [registry],
    }),
    lag: new GaugeVec({ name: 'fleetgate_member_seconds_since_last_event', help: 'Seconds since the member cluster last sent a watch event or bookmark.', labelNames: ['cluster', 'resource'], registers: [registry] }),
    // Where the cache's memory goes (docs/operations.md, Memory): cached objects' JSON lives in slabs outside the
    // JS heap, so heap metrics do not show it.
    slabBytes: new GaugeVec({
      name: 'fleetgate_cache_slab_bytes',
      help: "Bytes of the slabs that hold cached objects' JSON, by resource (group-qualified, as kube's GroupResource).",
      labelNames: ['resource'],
      registers: [registry],
    }),
    liveBytes: new GaugeVec({
      name: 'fleetgate_cache_live_bytes',
      help: "Bytes of the current cached objects' JSON in those slabs; the rest is freed space not yet compacted.",
      labelNames: ['resource'],
      registers: [registry],
    }),
    awaitingCollection: new GaugeVec({
      name: 'fleetgate_cache_slabs_awaiting_collection_bytes',
      help: 'Bytes of slabs the cache has let go, and of watch frame chunks, that the JavaScript engine has not collected yet.',
      registers: [registry],
    }),
    // cache.touchAheadBytes (src/api/touchahead.ts). The process's own buffer metrics leave these slabs out: another
    // thread allocated them.
    touchAhead: new CounterVec({
      name: 'fleetgate_cache_touch_ahead_slabs_total',
      help: 'Slabs made resident ahead by the touch-ahead thread: taken when needed, or missed (needed before one was ready: a base-size slab, faulted in on the event loop, stood in).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    touchAheadSeen: { taken: 0, missed: 0 },
    touchAheadHeld: new GaugeVec({
      name: 'fleetgate_cache_touch_ahead_held_bytes',
      help: "Bytes of slabs the touch-ahead thread made that the process holds (in use or ready); not in the process's own buffer figures.",
      registers: [registry],
    }),
  };
  return m;
}
