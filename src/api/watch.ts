// JSON watch framing as k8s.io/apiserver's watch handler writes it: one metav1.WatchEvent per line,
// `{"type":"ADDED","object":{...}}\n`. Frames are built once per event and shared by every watcher.

import { awaitCollection, copyBytes, uncountedBuffer } from './offheap.js';
import { statusJson, goJson, type Status } from './status.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** Set to "true" on the bookmark that ends a watch-list's initial events (KEP-3157). */
export const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';
/** 1.33+: on that bookmark, base64 of an empty encoded list; client-go's typed WatchList needs it. */
export const INITIAL_EVENTS_LIST_BLUEPRINT_ANNOTATION = 'kubernetes.io/initial-events-list-blueprint';

const PREFIX: Record<WatchEventType, Buffer> = {
  ADDED: Buffer.from('{"type":"ADDED","object":'),
  MODIFIED: Buffer.from('{"type":"MODIFIED","object":'),
  DELETED: Buffer.from('{"type":"DELETED","object":'),
  BOOKMARK: Buffer.from('{"type":"BOOKMARK","object":'),
  ERROR: Buffer.from('{"type":"ERROR","object":'),
};
const SUFFIX = Buffer.from('}\n');

// Frames are cut from 1 MiB chunks. Buffer.allocUnsafe pools only frames under 4 KiB, and a pod's is ~5 KB: one
// buffer outside V8's heap per event, and while V8 marks, every such allocation past its external-memory limit
// makes the main thread do a marking step (at 2,000 changes/s, one per event). A chunk is freed with its last
// frame; frames live from one event's fan-out until the watchers' sockets have taken them, so chunks stay few.
// Chunks are SharedArrayBuffers, which V8 does not count (offheap.ts): counted, the ~15 MB/s of frames at 2,000
// pod changes/s started a full mark every ~4 s, and at a million cached pods each one marked ~1 GB.
const FRAME_CHUNK = 1024 * 1024;
/** Frame chunks and slabs awaiting collection past which chunks are ordinary buffers again (offheap.ts). */
const FRAME_SLACK = 64 * 1024 * 1024;
let chunk: Buffer | undefined;
let chunkUsed = 0;

function frameBuffer(len: number): Buffer {
  if (len > FRAME_CHUNK / 8) return Buffer.allocUnsafeSlow(len);
  if (!chunk || chunkUsed + len > chunk.length) {
    // A chunk is let go as soon as the next one is made: its frames are gone within moments (offheap.ts).
    if (chunk) awaitCollection(chunk.buffer, chunk.length);
    chunk = uncountedBuffer(FRAME_CHUNK, FRAME_SLACK);
    chunkUsed = 0;
  }
  const out = chunk.subarray(chunkUsed, chunkUsed + len);
  // Keep the next frame 8-aligned, as Node's own pool does.
  chunkUsed += (len + 7) & ~7;
  return out;
}

/** One frame. `objectJson` must be compact JSON (the encoder compacts embedded objects, dropping any newline). */
export function encodeWatchEvent(type: WatchEventType, objectJson: string | Buffer): Buffer {
  const prefix = PREFIX[type];
  if (typeof objectJson !== 'string') {
    // Stored bytes: copied as they are (serialized objects carry no trailing newline).
    const out = frameBuffer(prefix.length + objectJson.length + SUFFIX.length);
    prefix.copy(out, 0);
    copyBytes(objectJson, out, prefix.length);
    SUFFIX.copy(out, prefix.length + objectJson.length);
    return out;
  }
  const body = objectJson.endsWith('\n') ? objectJson.slice(0, -1) : objectJson;
  const bodyLen = Buffer.byteLength(body);
  const out = frameBuffer(prefix.length + bodyLen + SUFFIX.length);
  prefix.copy(out, 0);
  out.write(body, prefix.length, 'utf8');
  SUFFIX.copy(out, prefix.length + bodyLen);
  return out;
}

/**
 * A bookmark object: an empty object of the watched kind carrying only metadata.resourceVersion (and annotations,
 * for the initial-events-end bookmark). Since 1.33 a zero creationTimestamp is omitted, so metadata holds nothing
 * else. `emptyFields` appends what the kind's zero value serializes to after metadata, e.g. for Pods
 * `"spec":{"containers":null},"status":{}`, to match the upstream bytes exactly.
 */
export function bookmarkJson(
  apiVersion: string,
  kind: string,
  resourceVersion: string,
  annotations?: Record<string, string>,
  emptyFields?: string,
): string {
  let meta = `{"resourceVersion":${goJson(resourceVersion)}`;
  if (annotations && Object.keys(annotations).length > 0) meta += `,"annotations":${goJson(sortedObject(annotations))}`;
  meta += '}';
  const tail = emptyFields ? `,${emptyFields}` : '';
  return `{"kind":${goJson(kind)},"apiVersion":${goJson(apiVersion)},"metadata":${meta}${tail}}`;
}

/** Go marshals maps with sorted keys. */
function sortedObject(m: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(m).sort()) out[k] = m[k]!;
  return out;
}

/** An ERROR event carrying a Status, e.g. the 410 for a too-old resourceVersion, sent before closing the stream. */
export function errorEventFromStatus(s: Status): Buffer {
  return encodeWatchEvent('ERROR', statusJson(s));
}
