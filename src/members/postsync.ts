// One full garbage collection once the member caches first finish listing, before /readyz says ready.
//
// A cold sync builds the whole cache in the JS heap (~0.6 GB at a million pods; ~1 GB when this was measured) and
// leaves the garbage of every page it read. V8 collects it on its own a few seconds later, incrementally: at a
// million pods that mark took ~0.65 s of wall time, with ~0.2-0.3 s of steps on the main thread and the marking
// threads on the other cores, and member changes waited behind it for up to a second (scenario 6 at full scale:
// every watcher that asked for all pods was ended as too slow). Done here, it comes while nothing is yet routed to
// the gateway, as one pause.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

/** Runs a full, blocking collection of the JS heap; returns how long it took, in ms. */
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
