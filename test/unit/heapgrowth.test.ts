// cache.heapGrowingPercent: while the heap is small, V8 sizes the old generation's next limit from what a full
// collection kept times 1 + percent/100, set at run time; past SMALL_HEAP_BYTES V8's own choice is back; a flag on
// node's own command line is left alone. Measured in a child process (V8 flags are process-wide): its
// incremental-marking trace gives the limit at which the next mark starts.

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SMALL_HEAP_BYTES, startHeapGrowth } from '../../src/cache/heapgrowth.js';
import { collectGarbage } from '../../src/api/gc.js';

const module = fileURLToPath(new URL('../../src/cache/heapgrowth.ts', import.meta.url));
const gcModule = fileURLToPath(new URL('../../src/api/gc.ts', import.meta.url));

/**
 * ~100 MB kept, startHeapGrowth(percent), a full collection, then garbage that outlives the young generation until
 * V8 starts marking on its own: the limit it started at, over the heap's size after the collection.
 */
function growthAfter(percent: number, nodeFlags: string[] = []): { setting: unknown; ratio: number } {
  const script = `
    const { startHeapGrowth } = await import(${JSON.stringify(module)});
    const { collectGarbage } = await import(${JSON.stringify(gcModule)});
    const v8 = await import('node:v8');
    globalThis.keep = [];
    for (let i = 0; i < 700_000; i++) globalThis.keep.push({ i, s: 'x' + i, a: [i, i + 1] });
    const { setting } = startHeapGrowth(${percent});
    collectGarbage();
    const live = v8.getHeapStatistics().used_heap_size;
    console.log('LIVE ' + JSON.stringify({ setting, live }));
    // Dies later, as a cache's window of events does.
    const window = [];
    for (let i = 0; i < 12_000_000; i++) {
      window.push({ i, s: 'y' + i });
      if (window.length > 200_000) window.splice(0, 100_000);
    }
  `;
  // V8's trace and the script's line share stdout, in order.
  const out = execFileSync(process.execPath, [...nodeFlags, '--trace-incremental-marking', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 90_000, maxBuffer: 256 * 2 ** 20 });
  const at = out.indexOf('LIVE ');
  expect(at, out.slice(0, 2000)).toBeGreaterThanOrEqual(0);
  const { setting, live } = JSON.parse(out.slice(at + 5, out.indexOf('\n', at)));
  const start = /Start \([^)]*\): \(size\/limit\/slack\) v8: (\d+)MB \/ (\d+)MB/.exec(out.slice(at));
  expect(start, `no mark started after the collection:\n${out.slice(at, at + 2000)}`).not.toBeNull();
  return { setting, ratio: Number(start![2]) / (live / 2 ** 20) };
}

describe('startHeapGrowth', () => {
  it('lets a small heap grow by the percent before the next mark, set at run time', () => {
    const half = growthAfter(50);
    const double = growthAfter(100);
    expect(half.setting).toBe(50);
    expect(double.setting).toBe(100);
    // The limit also carries room for one young generation (a few MB here).
    expect(half.ratio).toBeGreaterThan(1.4);
    expect(half.ratio).toBeLessThan(1.75);
    expect(double.ratio).toBeGreaterThan(1.9);
    expect(double.ratio).toBeLessThan(2.3);
  }, 180_000);

  it('gives a large heap V8 its own choice back, after the next full collection', () => {
    let used = 10 * 2 ** 20;
    const g = startHeapGrowth(50, { execArgv: [], nodeOptions: undefined, heapUsed: () => used });
    try {
      expect(g.current()).toBe(50);
      used = SMALL_HEAP_BYTES + 1;
      // A full collection: the observer, told of it a moment later, re-reads the heap.
      collectGarbage();
      return new Promise<void>((resolve, reject) => {
        const deadline = Date.now() + 10_000;
        const poll = () => {
          if (g.current() === 0) return resolve();
          if (Date.now() > deadline) return reject(new Error(`still ${g.current()} after a full collection`));
          setTimeout(poll, 10);
        };
        poll();
      }).finally(() => g.stop());
    } catch (e) {
      g.stop();
      throw e;
    }
  }, 30_000);

  it('leaves a --heap-growing-percent given to node alone, on its command line or in NODE_OPTIONS, and 0 to V8', () => {
    expect(startHeapGrowth(50, { execArgv: ['--heap-growing-percent=20'], nodeOptions: undefined }).setting).toBe('command line');
    expect(startHeapGrowth(50, { execArgv: ['--heap_growing_percent=20'], nodeOptions: undefined }).setting).toBe('command line');
    expect(startHeapGrowth(50, { execArgv: ['--heap-growing-percent', '20'], nodeOptions: '--heap-growing-percent=30' }).setting).toBe('command line');
    expect(startHeapGrowth(50, { execArgv: ['--expose-gc'], nodeOptions: '--max-old-space-size=2048 --heap-growing-percent=30' }).setting).toBe('NODE_OPTIONS');
    const other = startHeapGrowth(50, { execArgv: [], nodeOptions: '--heap-growing-percent-extra=30' });
    other.stop();
    expect(other.setting).toBe(50);
    expect(startHeapGrowth(0, { execArgv: [], nodeOptions: undefined }).setting).toBe('v8');
    const fromNode = growthAfter(100, ['--heap-growing-percent=20']);
    expect(fromNode.setting).toBe('command line');
    expect(fromNode.ratio).toBeLessThan(1.45);
  }, 180_000);
});
