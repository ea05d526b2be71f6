// The gateway's own traffic to a member is limited like a client-go rest.Config's QPS/Burst (a token bucket), and
// retries after failures wait like a client-go reflector's backoff (800ms doubling to 30s, jitter 1.0, forgotten
// after two quiet minutes), so a fleet of failing members costs each of them about one request every 30-60s.

export interface RateLimiter {
  /** Resolves when the caller may send one request; rejects with the signal's reason when it aborts first. */
  wait(signal?: AbortSignal): Promise<void>;
}

export interface Clock {
  /** Milliseconds from any fixed origin, never going backwards. */
  now(): number;
}

const monotonic: Clock = { now: () => performance.now() };

/**
 * qps tokens a second, at most burst saved up (golang.org/x/time/rate, which client-go's flowcontrol wraps).
 * Each wait() reserves the next token at once, so waiters are served in call order and never overtake one
 * another. qps <= 0 or Infinity: no limit.
 */
export function tokenBucket(qps: number, burst: number, clock: Clock = monotonic): RateLimiter {
  if (!(qps > 0) || qps === Infinity) return { wait: (signal) => (signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve()) };
  const capacity = Math.max(1, Math.floor(burst));
  let tokens = capacity;
  let last = clock.now();
  return {
    wait(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const now = clock.now();
      tokens = Math.min(capacity, tokens + ((now - last) * qps) / 1000);
      last = now;
      tokens -= 1;
      if (tokens >= 0) return Promise.resolve();
      const delay = (-tokens * 1000) / qps;
      return new Promise((resolve, reject) => {
        const onAbort = () => {
          clearTimeout(timer);
          // The reservation is given back, so an abandoned wait does not slow the others down.
          tokens += 1;
          reject(signal!.reason);
        };
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, Math.ceil(delay));
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  factor?: number;
  /** Each wait is d + random * jitter * d. */
  jitter?: number;
  /** A next() this long after the previous one starts over from initialMs. */
  resetAfterMs?: number;
  random?: () => number;
  clock?: Clock;
}

export interface Backoff {
  /** How long to wait before the next attempt (ms). */
  next(): number;
  /** The last attempt succeeded: the next failure waits initialMs again. */
  reset(): void;
}

/** client-go's wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0) as the reflector uses it. */
export function backoff(opts: BackoffOptions = {}): Backoff {
  const initial = opts.initialMs ?? 800;
  const max = opts.maxMs ?? 30_000;
  const factor = opts.factor ?? 2;
  const jitter = opts.jitter ?? 1;
  const resetAfter = opts.resetAfterMs ?? 120_000;
  const random = opts.random ?? Math.random;
  const clock = opts.clock ?? monotonic;
  let duration = initial;
  let lastAt: number | undefined;
  return {
    next() {
      const now = clock.now();
      if (lastAt !== undefined && now - lastAt > resetAfter) duration = initial;
      lastAt = now;
      const d = duration;
      duration = Math.min(max, duration * factor);
      return jitter > 0 ? d + random() * jitter * d : d;
    },
    reset() {
      duration = initial;
      lastAt = undefined;
    },
  };
}

/** Resolves after ms, or at once (without rejecting) when the signal aborts: loops check the signal themselves. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
