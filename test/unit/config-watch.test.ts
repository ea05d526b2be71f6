// watchForChanges (src/config/watch.ts): a change of the watched files calls onChange; writes to other files of the
// same directory do not (the demo keeps its audit log beside its certificates, and every audited request reloaded
// the serving certificate, key and CRL). Files reloaded together from several directories are one watch, whose
// reloads never overlap (src/server/tlsreload.ts: the serving certificate and the client CA from two Secrets).

import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { fileSignature, watchForChanges, type FileWatcher } from '../../src/config/watch.js';
import { createCA, issueServingCert } from '../../src/pki/index.js';
import { loadTLSFiles } from '../../src/server/tlsreload.js';

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

  it('watches several directories as one: a reload waits for the one under way, and the last reads the files last', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleetgate-watch-'));
    const [a, b] = [join(dir, 'a'), join(dir, 'b')];
    await mkdir(a);
    await mkdir(b);
    const [fa, fb] = [join(a, 'tls.crt'), join(b, 'ca.crt')];
    await writeFile(fa, 'a1');
    await writeFile(fb, 'b1');
    const signature = async () => `${await fileSignature(fa)}|${await fileSignature(fb)}`;
    let running = 0;
    let mostAtOnce = 0;
    const reads: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    watchers.push(
      watchForChanges({
        dir: [a, b],
        intervalMs: 60_000,
        signature,
        initialSignature: await signature(),
        onChange: async () => {
          mostAtOnce = Math.max(mostAtOnce, ++running);
          try {
            reads.push(`${await readFile(fa, 'utf8')}+${await readFile(fb, 'utf8')}`);
            if (reads.length === 1) await gate;
          } finally {
            running--;
          }
        },
        onError: (e) => {
          throw e;
        },
      }),
    );
    await writeFile(fa, 'a2, longer');
    await until('the first reload', () => reads.length === 1);
    // The other directory changes while the first reload is still under way: its reload waits, then reads both.
    await writeFile(fb, 'b2, longer');
    await new Promise((r) => setTimeout(r, 200));
    expect(reads).toEqual(['a2, longer+b1']);
    release();
    await until('the second reload', () => reads.length === 2);
    expect(reads[1]).toBe('a2, longer+b2, longer');
    expect(mostAtOnce).toBe(1);
  });

  it('loadTLSFiles reloads a client CA that lives in a directory of its own', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleetgate-watch-'));
    const [serving, client] = [join(dir, 'serving'), join(dir, 'client')];
    await mkdir(serving);
    await mkdir(client);
    const ca = await createCA('serving-ca');
    const cert = await issueServingCert(ca, ['127.0.0.1']);
    const [first, next] = await Promise.all([createCA('client-ca-1'), createCA('client-ca-2')]);
    await writeFile(join(serving, 'tls.crt'), cert.certPem);
    await writeFile(join(serving, 'tls.key'), cert.keyPem);
    await writeFile(join(client, 'ca.crt'), first.certPem);
    const files = await loadTLSFiles(
      { certFile: join(serving, 'tls.crt'), keyFile: join(serving, 'tls.key'), clientCAFile: join(client, 'ca.crt'), minVersion: 'TLSv1.2' },
      pino({ level: 'silent' }),
      new Registry(),
    );
    // Every certificate of the bundle is an anchor (Go's Roots pool), intermediates too.
    expect(files.options.allowPartialTrustChain).toBe(true);
    const applied: string[][] = [];
    watchers.push(files.watch((_o, cas) => applied.push(cas.map((c) => c.subject))));
    await writeFile(join(client, '.ca.tmp'), first.certPem + next.certPem);
    await rename(join(client, '.ca.tmp'), join(client, 'ca.crt'));
    await until('the new bundle to be applied', () => applied.length >= 1);
    expect(applied.at(-1)).toEqual([new X509Certificate(first.certPem).subject, new X509Certificate(next.certPem).subject]);
  });
});
