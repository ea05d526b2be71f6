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

/** A watcher of dir whose onChange counts; signature() as given. */
function counting(signature: () => Promise<string>): { calls: () => number } {
  let n = 0;
  watchers.push(
    watchForChanges({
      dir,
      intervalMs: 60_000,
      signature,
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
});
