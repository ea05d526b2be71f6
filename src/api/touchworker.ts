// The touch-ahead thread (touchahead.ts): a size in, a SharedArrayBuffer of that size whose every page has been
// written once out.

import { parentPort } from 'node:worker_threads';
import { collectGarbage } from './gc.js';

/** The smallest page size Linux uses; a larger one is only written more than once. */
const PAGE = 4096;

function touched(size: number): SharedArrayBuffer {
  const sab = new SharedArrayBuffer(size);
  const bytes = new Uint8Array(sab);
  for (let i = 0; i < size; i += PAGE) bytes[i] = 0;
  return sab;
}

const port = parentPort!;
let collecting = false;
port.on('message', (size: number) => {
  port.postMessage({ size, buffer: touched(size) });
  // The buffer's memory lives while any thread's object for it does: this thread's must go at once, or memory the
  // taker lets go of stays allocated until this mostly idle heap happens to be collected. In a later turn, when
  // nothing on this one's stack can still hold it.
  if (collecting) return;
  collecting = true;
  setImmediate(() => {
    collecting = false;
    collectGarbage();
  });
});
