// Intake workers: threads that parse and serialize member list pages (intakeworker.ts), so that a cold sync of a
// million objects is not JSON.parse + JSON.stringify of each on the main thread, which also serves every request.
// The main thread reads a page's bytes, hands them over (transferred, not copied), and stores what comes back.
//
// A worker that dies fails the pages it held (their lists are abandoned and retried by their reflectors, as after
// any failed list) and is replaced: at once, or after a growing pause when it died soon after it started (a worker
// that cannot start must not be restarted in a tight loop).

import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { spawnModuleWorker } from '../api/workers.js';
import { fromWire, type EncodedPage, type IntakeTransform, type WirePage } from './intake.js';
import type { IntakeRequest } from './intakeworker.js';

export interface IntakePool {
  /** The page (a list answer's JSON) made the cache's by a worker; page's memory is given away. */
  encode(page: Buffer, t: IntakeTransform): Promise<EncodedPage>;
  readonly size: number;
  /** Workers that died and were replaced. */
  readonly crashes: number;
  close(): Promise<void>;
}

export interface IntakePoolOptions {
  workers: number;
  log: Logger;
  /** Called when a worker dies. */
  onCrash?: () => void;
  /** Tests: make the n-th request (from 1) kill its worker. */
  faultAt?: (n: number) => 'exit' | undefined;
}

interface Slot {
  worker: Worker;
  /** Died; its replacement is not started yet. */
  down: boolean;
  pending: Map<number, { resolve: (p: EncodedPage) => void; reject: (e: Error) => void }>;
}

/** A worker that dies sooner than this after its start died young: its replacement waits. */
const YOUNG_MS = 5000;
const MAX_PAUSE_MS = 30_000;

export function startIntakePool(o: IntakePoolOptions): IntakePool {
  if (o.workers < 1) throw new Error('an intake pool needs at least one worker');
  const log = o.log.child({ component: 'intake-pool' });
  let nextID = 0;
  let requests = 0;
  let crashes = 0;
  let closed = false;
  const slots: Slot[] = [];
  /** Per slot: how many of its workers in a row died young. */
  const young: number[] = [];

  const start = (i: number): void => {
    const worker = spawnModuleWorker('intakeworker', import.meta.url);
    const startedAt = Date.now();
    const slot: Slot = { worker, down: false, pending: new Map() };
    slots[i] = slot;
    // Idle workers do not keep the process alive; a busy one does (ref below).
    worker.unref();
    worker.on('message', (m: { id: number; page?: WirePage; error?: string }) => {
      const p = slot.pending.get(m.id);
      if (!p) return;
      slot.pending.delete(m.id);
      if (slot.pending.size === 0) worker.unref();
      if (m.error !== undefined || !m.page) return p.reject(new Error(`intake worker: ${m.error ?? 'no page'}`));
      p.resolve(fromWire(m.page));
    });
    let failed = false;
    const fail = (why: string) => {
      if (failed) return;
      failed = true;
      slot.down = true;
      const err = new Error(`intake worker died: ${why}`);
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
      if (closed) return;
      crashes++;
      o.onCrash?.();
      young[i] = Date.now() - startedAt < YOUNG_MS ? (young[i] ?? 0) + 1 : 0;
      const pause = young[i] ? Math.min(MAX_PAUSE_MS, 100 * 2 ** (young[i] - 1)) : 0;
      log.error({ worker: i, err: why, restartInMs: pause }, 'intake worker died; starting another');
      setTimeout(() => closed || start(i), pause).unref();
    };
    worker.on('error', (e) => fail(e.message));
    worker.on('exit', (code) => fail(`exit code ${code}`));
  };
  for (let i = 0; i < o.workers; i++) start(i);

  return {
    encode(page, t) {
      if (closed) return Promise.reject(new Error('intake pool closed'));
      // The least busy worker that is up; the first of equals.
      let slot: Slot | undefined;
      for (const s of slots) if (!s.down && (!slot || s.pending.size < slot.pending.size)) slot = s;
      if (!slot) return Promise.reject(new Error('no intake worker is running (they keep dying at start)'));
      // The bytes go over whole: a buffer sharing its memory with others (Buffer's pool) is copied first.
      let own = page;
      if (page.byteOffset !== 0 || page.buffer.byteLength !== page.byteLength || !(page.buffer instanceof ArrayBuffer)) {
        own = Buffer.allocUnsafeSlow(page.byteLength);
        page.copy(own);
      }
      const id = ++nextID;
      const msg: IntakeRequest = { id, page: own.buffer as ArrayBuffer, length: own.byteLength, transform: t, fault: o.faultAt?.(++requests) };
      return new Promise<EncodedPage>((resolve, reject) => {
        slot.pending.set(id, { resolve, reject });
        slot.worker.ref();
        slot.worker.postMessage(msg, [msg.page]);
      });
    },
    get size() {
      return slots.length;
    },
    get crashes() {
      return crashes;
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
