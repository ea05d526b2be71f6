// How far V8 lets the JS heap of a process that hosts the cache grow past what its last full collection kept.
//
// The cache's heap is mostly long-lived (the stores' objects, the event window), and under churn it promotes a steady
// 1-2 MB/s that dies later in the window. V8 sizes the next limit from how fast it marks against how fast the process
// allocates. With a small heap marking looks cheap, so it takes its minimum, 1.1 times what survived, and ~100 MB of
// heap is then left less room than a young generation: the next mark starts as soon as one ends. At 30,000 pods
// under 2,000 changes a second (benchmark scenario 6) that was a full mark every ~0.5 s, whose marking threads took
// ~0.15 of a core from the event loop's. A fixed factor trades memory for it, up to `percent` of the live heap.
//
// Only small heaps get it: V8's flag replaces its own factor rather than bounding it, and what it costs grows with
// the heap (at a million pods, ~0.6 GB, 50% is ~0.3 GB more; there V8's own factor was ~1.2 in scenario 6, which
// gave a mark every ~30 s of churn rather than back to back). So after each full collection the factor is set while
// what the heap holds is under SMALL_HEAP_BYTES, and V8's own is restored above. V8 still marks sooner near
// --max-old-space-size.

import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { nodeFlag, type FlagSource } from './nodeflags.js';

const FLAG = '--heap-growing-percent';
/** Up to here the factor costs at most percent of this much memory (128 MiB at 50%). */
export const SMALL_HEAP_BYTES = 256 * 2 ** 20;

export interface HeapGrowth {
  /**
   * The percent; where node was given the flag instead ('command line' or 'NODE_OPTIONS': more specific, and left
   * alone); or 'v8' (0: V8's own choice).
   */
  setting: number | FlagSource | 'v8';
  /** The percent in effect now: 0 while the heap is large. */
  current(): number;
  stop(): void;
}

/** Applies percent to this process's heap while it is small (see above), from now until stop(). */
export function startHeapGrowth(percent: number, o: { execArgv?: readonly string[]; nodeOptions?: string; heapUsed?: () => number } = {}): HeapGrowth {
  // Setting the flag at run time would replace what node was given.
  const given = nodeFlag('heap-growing-percent', o.execArgv ?? process.execArgv, 'nodeOptions' in o ? o.nodeOptions : process.env.NODE_OPTIONS);
  if (given) return { setting: given.source, current: () => 0, stop() {} };
  if (percent <= 0) return { setting: 'v8', current: () => 0, stop() {} };
  const heapUsed = o.heapUsed ?? (() => getHeapStatistics().used_heap_size);
  let current = -1;
  const apply = (): void => {
    const want = heapUsed() < SMALL_HEAP_BYTES ? Math.round(percent) : 0;
    if (want === current) return;
    // V8 reads the flag each time it sizes the heap after a full collection, so setting it at run time takes effect
    // from the next one; 0 gives V8 its own choice back.
    setFlagsFromString(`${FLAG}=${want}`);
    current = want;
  };
  apply();
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        apply();
        return;
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return { setting: percent, current: () => current, stop: () => observer.disconnect() };
}
