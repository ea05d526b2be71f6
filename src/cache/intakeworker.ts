// An intake worker (intakepool.ts): list pages in, serialized pages out (intake.ts encodeListBytes), so the gateway's
// main thread only copies bytes into the store.

import { parentPort } from 'node:worker_threads';
import { encodeListBytes, toWire, type IntakeTransform } from './intake.js';

export interface IntakeRequest {
  id: number;
  /** The page's JSON (UTF-8), transferred. */
  page: ArrayBuffer;
  length: number;
  transform: IntakeTransform;
  /** Tests: fail this way instead of encoding (exit: the worker dies). */
  fault?: 'exit';
}

const port = parentPort!;
port.on('message', (m: IntakeRequest) => {
  if (m.fault === 'exit') process.exit(3);
  try {
    const page = encodeListBytes(Buffer.from(m.page, 0, m.length), m.transform, Math.ceil(m.length * (m.transform.resource === 'events' ? 2.2 : 1.1)));
    port.postMessage({ id: m.id, page: toWire(page) }, [page.bytes.buffer as ArrayBuffer, page.offsets.buffer as ArrayBuffer]);
  } catch (e) {
    // Not a crash: the page could not be read (the list fails and is retried).
    port.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) });
  }
});
