// What the reflector does with one line of a live pod watch, written out for tests that compare the byte path
// with the object path line by line (reflector.ts onLine and onEvent).

import type { KubeObject } from '../../src/api/meta.js';
import { watchEventOf } from '../../src/cache/intake.js';
import type { MemberSink } from '../../src/cache/merged.js';
import { splitLines } from '../../src/cache/reflector.js';

export type Via = 'bytes' | 'objects' | 'ignored' | 'threw';
export interface Delivery {
  via: Via;
  rv?: string;
}

/** The object path (onEvent): the line parsed, changes with metadata handed to apply; the version it moves to. */
export function viaObjects(sink: MemberSink, line: Buffer | string): Delivery {
  const text = typeof line === 'string' ? line : line.toString('utf8');
  if (text.trim() === '') return { via: 'ignored' };
  const ev = JSON.parse(text) as { type?: string; object?: KubeObject };
  if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') return { via: 'ignored' };
  const obj = ev.object;
  if (!obj?.metadata) return { via: 'ignored' };
  // Read first, as the reflector does: apply makes the object the cache's.
  const v = obj.metadata.resourceVersion;
  sink.apply(ev.type, obj);
  return { via: 'objects', rv: v || undefined };
}

/** onLine: bytes when the frame is the usual one and the sink takes them, else viaObjects. */
export function viaBytes(sink: MemberSink, b: Buffer, start = 0, end = b.length): Delivery {
  const ev = watchEventOf(b, start, end);
  if (ev) {
    const v = sink.applyBytes!(ev.type, b, ev.objectStart, ev.objectEnd);
    if (v !== undefined) return { via: 'bytes', rv: v || undefined };
  }
  return viaObjects(sink, b.toString('utf8', start, end));
}

/** The lines splitLines makes of these chunks, as latin1 text. */
export async function linesOf(chunks: Buffer[]): Promise<string[]> {
  const out: string[] = [];
  await splitLines(
    (async function* () {
      yield* chunks;
    })(),
    (b, start, end) => {
      out.push(b.toString('latin1', start, end));
      return true;
    },
  );
  return out;
}
