// A churn generator: creates, updates and deletes pods across simulated clusters at a steady rate, as a busy
// fleet does. Writes go through SimCluster, so watchers see ordinary ADDED/MODIFIED/DELETED events.

import type { KubeObject } from '../../src/api/meta.js';
import type { SimCluster } from './cluster.js';
import { generatePod } from './podgen.js';

export interface ChurnOptions {
  /** Operations per second over all clusters. */
  ratePerSecond: number;
  namespace?: string;
  /** Stop after this many operations (the generator also stops on stop()). */
  maxOps?: number;
  /** Share of creates / updates / deletes; deletes only happen when there is something to delete. */
  mix?: { create: number; update: number; delete: number };
  seed?: number;
  /** Prefix of the generated pods' app label (and names), so several generators do not collide. */
  appPrefix?: string;
}

export interface Churn {
  readonly ops: number;
  readonly counts: { create: number; update: number; delete: number };
  /** Resolves when maxOps is reached or stop() is called. */
  done: Promise<void>;
  stop(): void;
}

export function startChurn(clusters: SimCluster[], opts: ChurnOptions): Churn {
  const namespace = opts.namespace ?? 'churn';
  const mix = opts.mix ?? { create: 0.4, update: 0.4, delete: 0.2 };
  let rng = opts.seed ?? 42;
  const rand = () => {
    rng = (rng * 1103515245 + 12345) % 2147483648;
    return rng / 2147483648;
  };
  const live: Array<Set<string>> = clusters.map(() => new Set());
  for (const c of clusters) {
    const ns = c.resourceFor('', 'namespaces')!;
    if (!c.get('', 'namespaces', '', namespace)) c.create(ns, '', { metadata: { name: namespace } });
  }
  const counts = { create: 0, update: 0, delete: 0 };
  let ops = 0;
  let index = 0;
  let stopped = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));

  const one = () => {
    const ci = Math.floor(rand() * clusters.length);
    const c = clusters[ci];
    const pods = c.resourceFor('', 'pods')!;
    const names = live[ci];
    const x = rand();
    if (names.size === 0 || x < mix.create) {
      const { pod, status } = generatePod({ namespace, app: `${opts.appPrefix ?? 'churn'}-${ci}`, index: index++, node: `${c.name}-node-1` });
      (pod as any).status = status;
      const stored = c.load(pods, pod as KubeObject);
      names.add(stored.name);
      counts.create++;
    } else if (x < mix.create + mix.update) {
      const name = pick(names, rand);
      const cur = c.get('', 'pods', namespace, name) as any;
      if (cur) {
        const next = structuredClone(cur);
        next.metadata.annotations = { ...next.metadata.annotations, 'churn/generation': String(ops) };
        next.status.containerStatuses[0].restartCount++;
        c.update(pods, namespace, name, next, { subresource: '' });
        counts.update++;
      }
    } else {
      const name = pick(names, rand);
      names.delete(name);
      c.delete(pods, namespace, name, { gracePeriodSeconds: 0 });
      counts.delete++;
    }
    ops++;
  };

  // Batches every 10 ms keep the rate steady without one timer per operation.
  const started = Date.now();
  const timer = setInterval(() => {
    if (stopped) return;
    const due = Math.floor(((Date.now() - started) / 1000) * opts.ratePerSecond);
    while (ops < due && !stopped) {
      one();
      if (opts.maxOps !== undefined && ops >= opts.maxOps) churn.stop();
    }
  }, 10);

  const churn: Churn = {
    get ops() {
      return ops;
    },
    counts,
    done,
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      resolveDone();
    },
  };
  return churn;
}

function pick(names: Set<string>, rand: () => number): string {
  const i = Math.floor(rand() * names.size);
  let j = 0;
  for (const n of names) if (j++ === i) return n;
  return names.values().next().value!;
}
