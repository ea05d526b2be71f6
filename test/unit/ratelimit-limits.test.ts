// The token bucket that caps the gateway's traffic to a member, and the reflector backoff (client-go's
// 800ms doubling to 30s with jitter 1.0, reset after two quiet minutes).

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoff, sleep, tokenBucket } from '../../src/cache/ratelimit.js';

describe('tokenBucket', () => {
  let t = 0;
  const clock = { now: () => t };
  beforeEach(() => {
    t = 0;
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const advance = async (ms: number) => {
    t += ms;
    await vi.advanceTimersByTimeAsync(ms);
  };

  it('lets a burst through at once, then one request per 1/qps, in call order', async () => {
    const l = tokenBucket(10, 3, clock);
    const done: number[] = [];
    const waits = [0, 1, 2, 3, 4].map((i) => l.wait().then(() => done.push(i)));
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toEqual([0, 1, 2]);
    await advance(99);
    expect(done).toEqual([0, 1, 2]);
    await advance(1);
    expect(done).toEqual([0, 1, 2, 3]);
    await advance(100);
    expect(done).toEqual([0, 1, 2, 3, 4]);
    await Promise.all(waits);
  });

  it('refills up to the burst while idle, not beyond', async () => {
    const l = tokenBucket(10, 2, clock);
    await l.wait();
    await l.wait();
    await advance(10_000);
    const done: number[] = [];
    [0, 1, 2].forEach((i) => void l.wait().then(() => done.push(i)));
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toEqual([0, 1]);
    await advance(100);
    expect(done).toEqual([0, 1, 2]);
  });

  it('gives the token back when a wait is aborted, and rejects with the reason', async () => {
    const l = tokenBucket(10, 1, clock);
    await l.wait();
    const ac = new AbortController();
    const aborted = l.wait(ac.signal);
    ac.abort(new Error('stopped'));
    await expect(aborted).rejects.toThrow('stopped');
    // The next caller waits one interval, not two.
    let ok = false;
    void l.wait().then(() => (ok = true));
    await advance(100);
    expect(ok).toBe(true);
  });

  it('does not limit with qps 0', async () => {
    const l = tokenBucket(0, 0, clock);
    for (let i = 0; i < 1000; i++) await l.wait();
  });
});

describe('backoff', () => {
  it('doubles from 800ms to a 30s cap, each wait stretched by up to 100% jitter', () => {
    const none = backoff({ random: () => 0, clock: { now: () => 0 } });
    expect(Array.from({ length: 8 }, () => none.next())).toEqual([800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    const full = backoff({ random: () => 0.999999, clock: { now: () => 0 } });
    const w = Array.from({ length: 7 }, () => full.next());
    expect(w[0]).toBeCloseTo(1600, 0);
    expect(w[6]).toBeCloseTo(60000, -1);
    const real = backoff();
    for (let i = 0; i < 20; i++) {
      const d = real.next();
      expect(d).toBeGreaterThanOrEqual(800);
      expect(d).toBeLessThan(60_000);
    }
  });

  it('starts over after reset() and after two quiet minutes', () => {
    let t = 0;
    const b = backoff({ random: () => 0, clock: { now: () => t } });
    b.next();
    b.next();
    expect(b.next()).toBe(3200);
    b.reset();
    expect(b.next()).toBe(800);
    t += 60_000;
    expect(b.next()).toBe(1600);
    t += 120_001;
    expect(b.next()).toBe(800);
  });
});

describe('sleep', () => {
  it('ends early, without rejecting, when its signal aborts', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const s = sleep(10_000, ac.signal);
    setTimeout(() => ac.abort(), 10);
    await s;
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
