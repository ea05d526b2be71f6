// List bodies are written in chunks from a pool (src/cache/list.ts): many lists in flight at once must reuse chunks
// rather than allocate one per chunk (memory V8 counts, answered with collections), and the pool lets go of what a
// burst needed once it is over.

import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listChunkPoolSize, writeList, type ListTarget } from '../../src/cache/list.js';
import type { StoredObject } from '../../src/cache/store.js';
import { printerFor } from '../../src/api/printers/index.js';

const target: ListTarget = {
  desc: { group: '', version: 'v1', resource: 'pods', singular: 'pod', kind: 'Pod', listKind: 'PodList', namespaced: true, verbs: ['list'] },
  printer: printerFor('', 'pods'),
  namespace: '',
};

/** A response that holds every chunk's done callback until release(): a connection still draining. */
function heldResponse() {
  const chunks: Buffer[] = [];
  const held: Array<() => void> = [];
  let ended = false;
  const res = {
    destroyed: false,
    writeHead: () => res,
    write(chunk: Buffer, done?: () => void) {
      chunks.push(Buffer.from(chunk));
      if (done) held.push(done);
      return true;
    },
    end(chunk?: Buffer, done?: () => void) {
      if (chunk) chunks.push(Buffer.from(chunk));
      if (done) held.push(done);
      ended = true;
    },
    on: () => res,
    off: () => res,
  };
  return {
    res: res as unknown as ServerResponse,
    body: () => Buffer.concat(chunks).toString(),
    ended: () => ended,
    release: () => held.splice(0).forEach((fn) => fn()),
  };
}

function objects(n: number, size: number): StoredObject[] {
  return Array.from({ length: n }, (_, i) => {
    const json = Buffer.from(JSON.stringify({ metadata: { name: `p${i}` }, pad: 'x'.repeat(size) }));
    return { json, bytes: json, start: 0, end: json.length } as unknown as StoredObject;
  });
}

async function listsInFlight(count: number, items: StoredObject[]) {
  const responses = Array.from({ length: count }, heldResponse);
  await Promise.all(responses.map((r) => writeList(r.res, target, { rv: 7, items, continueToken: '' }, { as: 'object' })));
  return responses;
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('list chunk pool', () => {
  it('writes the list whole, its last chunk from the pool too', async () => {
    const items = objects(300, 3000);
    const [r] = await listsInFlight(1, items);
    expect(r!.ended()).toBe(true);
    const body = JSON.parse(r!.body());
    expect(body).toMatchObject({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '7' } });
    expect(body.items).toHaveLength(300);
    expect(body.items[299].metadata.name).toBe('p299');
    r!.release();
  });

  it('reuses the chunks of lists that were in flight together, then lets the extra ones go', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    // ~1.2 MB each: three chunks, the last one partly filled.
    const items = objects(400, 3000);
    const first = await listsInFlight(40, items);
    first.forEach((r) => r.release());
    const pooled = listChunkPoolSize();
    expect(pooled).toBeGreaterThanOrEqual(100);

    const alloc = vi.spyOn(Buffer, 'allocUnsafeSlow');
    const allocUnsafe = vi.spyOn(Buffer, 'allocUnsafe');
    const second = await listsInFlight(40, items);
    expect(alloc).not.toHaveBeenCalled();
    expect(allocUnsafe).not.toHaveBeenCalled();
    second.forEach((r) => r.release());
    expect(second.every((r) => JSON.parse(r.body()).items.length === 400)).toBe(true);
    alloc.mockRestore();
    allocUnsafe.mockRestore();

    // Not needed for a whole trim period: back to the few kept.
    vi.advanceTimersByTime(10_000);
    vi.advanceTimersByTime(10_000);
    expect(listChunkPoolSize()).toBe(16);
  });
});
