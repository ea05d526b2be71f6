// watchForChanges (src/config/watch.ts): a change of the watched files calls onChange; writes to other files of the
// same directory do not (the demo keeps its audit log beside its certificates, and every audited request reloaded
// the serving certificate, key and CRL).

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileSignature, watchForChanges, type FileWatcher } from '../../src/config/watch.js';

const watchers: FileWatcher[] = [];
let dir = '';

afterEach(async () => {
  for (const w of watchers.splice(0)) w.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function until(what: string, pred: () => boolean, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A watcher of dir whose onChange counts; signature() and the initial signature as given. */
function counting(signature: () => Promise<string>, initialSignature?: string): { calls: () => number } {
  let n = 0;
  watchers.push(
    watchForChanges({
      dir,
      intervalMs: 60_000,
      signature,
      initialSignature,
      onChange: async () => {
        n++;
      },
      onError: (e) => {
        throw e;
      },
    }),
  );
  return { calls: () => n };
}

describe('watchForChanges', () => {
  it('calls onChange for its own files only, not for other files of the directory', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleetgate-watch-'));
    const watched = join(dir, 'serving.crt');
    const other = join(dir, 'audit.log');
    await writeFile(watched, 'first');
    await writeFile(other, '');
    const own = counting(() => fileSignature(watched));
    // The control watches the other file: once it has seen a write, so has fs.watch for the watcher under test.
    const control = counting(() => fileSignature(other));
    // Both take their first signature before the writes.
    await new Promise((r) => setTimeout(r, 100));

    for (let round = 1; round <= 3; round++) {
      await writeFile(other, `line ${round}\n`.repeat(round));
      await until(`the control's change ${round}`, () => control.calls() >= round);
    }
    expect(own.calls()).toBe(0);

    await writeFile(watched, 'second, longer');
    await until('the watched file to be reported', () => own.calls() >= 1);
    expect(own.calls()).toBe(1);
  });

  it('reloads a change made between the first read and the start of the watch when given the signature from before the read', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleetgate-watch-'));
    const crl = join(dir, 'client-ca.crl');
    await writeFile(crl, 'first');
    const beforeRead = await fileSignature(crl);
    // The caller has read "first"; the file changes before its watch starts.
    await writeFile(crl, 'second, longer');
    const stale = counting(() => fileSignature(crl), beforeRead);
    const current = counting(() => fileSignature(crl), await fileSignature(crl));
    const unknown = counting(() => fileSignature(crl));
    await until('the change made before the watch to be reloaded', () => stale.calls() >= 1, 5_000);
    // All three took their first signature together; the stale one then waited out the debounce.
    expect(stale.calls()).toBe(1);
    expect(current.calls()).toBe(0);
    expect(unknown.calls()).toBe(0);
  });
});
