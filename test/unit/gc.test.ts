// The full collection of a thread's heap on demand (src/api/gc.ts): the member caches run one after their first listing.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/api/gc.js';

describe('collectGarbage', () => {
  it('collects what nothing references any more, at once, and says how long it took', () => {
    let ref: WeakRef<object> | undefined;
    (() => {
      ref = new WeakRef({ big: new Array(1000).fill('x') });
    })();
    // A WeakRef's target is kept until the end of the current job: let it go in a turn of its own.
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        const ms = collectGarbage();
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ref!.deref()).toBeUndefined();
        // The process's own global is not given gc().
        expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
        resolve();
      }),
    );
  });
});
