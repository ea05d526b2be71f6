// Suites whose cases must hold whether the WebAssembly JSON scan (src/api/jsonscan.ts) checks the member's bytes
// first or the byte scanner (src/api/jsonbytes.ts) checks them alone, as before the scan is loaded, for pages it does
// not take, or where it cannot load.

import { afterAll, beforeAll, describe, expect } from 'vitest';
import { loadJSONScan, setJSONScan } from '../../src/api/jsonscan.js';

/** Declares body twice, once with the scan on and once with it off; scanning() says which one is running. */
export function withBothScans(body: (scanning: () => boolean) => void): void {
  for (const scan of [true, false]) {
    describe(scan ? 'with the WebAssembly scan' : 'with the byte scanner alone', () => {
      beforeAll(async () => {
        if (scan) expect(await loadJSONScan()).toBeDefined();
        setJSONScan(scan);
      });
      afterAll(() => setJSONScan(true));
      body(() => scan);
    });
  }
}
