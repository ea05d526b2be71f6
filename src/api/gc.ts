// A full, blocking collection of this thread's JS heap, on demand: for the member caches once after their first
// lists (src/members/caches.ts), and for the touch-ahead thread, which must let go of each buffer it hands over
// (touchahead.ts). The process's own global gc is left as it is (node was not given --expose-gc).

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

/** Runs a full, blocking collection of the calling thread's JS heap; returns how long it took, in ms. */
export function collectGarbage(): number {
  if (!gc) {
    // A context made after the flag is set has gc(); the process's own global is left as it is.
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  const t0 = performance.now();
  gc();
  return performance.now() - t0;
}
