// Reloading files the gateway reads while it runs (flow-control configuration, the client certificate revocation
// list). fs.watch alone is not enough: it misses changes on some file systems, and Kubernetes ConfigMap and Secret
// volumes replace files by renaming a symlinked directory (..data), which a watch on the file itself never sees.
// So the directory is watched for a quick reaction and a signature (names, sizes, modification times) is also
// polled, which follows the symlinks.

import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';

export interface FileWatcher {
  close(): void;
}

export interface WatchOptions {
  /**
   * The directory to fs.watch (the file's directory for a single file), or several: files that are reloaded together
   * but live apart (a serving certificate and a client CA from two Secrets) are one watch, so that their reloads run
   * one after another and the last one applied read the files last. Two watches could each read the files, and the
   * one that read them first could finish last and apply the older set.
   */
  dir: string | readonly string[];
  /** How often signature() is polled. */
  intervalMs: number;
  /** Changes whenever the watched content changes; rejections go to onError. */
  signature: () => Promise<string>;
  /**
   * signature() as it was before the caller first read the files. A change between that read and the start of this
   * watch is then reloaded; without it, the first signature read here is the baseline and such a change goes unseen
   * until the next one.
   */
  initialSignature?: string;
  /** Called serialized, never overlapping, after a change (debounced); its rejections go to onError. */
  onChange: () => Promise<void>;
  onError: (err: unknown) => void;
}

const DEBOUNCE_MS = 50;

export function watchForChanges(o: WatchOptions): FileWatcher {
  let closed = false;
  let running = false;
  let pending = false;
  let debounce: NodeJS.Timeout | undefined;
  let lastSignature: string | undefined = o.initialSignature;

  const run = async () => {
    if (closed) return;
    if (running) {
      pending = true;
      return;
    }
    running = true;
    try {
      // fs.watch reports every file of the directory, and the watched files often share it with files that change
      // all the time (the demo writes its audit log next to its certificates): without this, every audited request
      // reloaded the serving certificate, key and CRL.
      const s = await o.signature().catch(() => undefined);
      if (s !== undefined && s === lastSignature) return;
      if (s !== undefined) lastSignature = s;
      await o.onChange();
    } catch (e) {
      o.onError(e);
    } finally {
      running = false;
      if (pending && !closed) {
        pending = false;
        void run();
      }
    }
  };
  const schedule = () => {
    if (closed) return;
    if (debounce) clearTimeout(debounce);
    debounce = setTimeout(() => void run(), DEBOUNCE_MS);
    debounce.unref?.();
  };

  void o
    .signature()
    .then((s) => {
      if (lastSignature === undefined) lastSignature = s;
      else if (s !== lastSignature) schedule();
    })
    .catch(() => {});
  const watchers: FSWatcher[] = [];
  for (const dir of new Set((typeof o.dir === 'string' ? [o.dir] : o.dir).map((d) => resolve(d)))) {
    try {
      const w = watch(dir, { persistent: false }, schedule);
      w.on('error', (e) => o.onError(e));
      watchers.push(w);
    } catch (e) {
      o.onError(e);
    }
  }
  const poll = setInterval(() => {
    o.signature().then(
      (s) => {
        if (s !== lastSignature) schedule();
      },
      (e) => o.onError(e),
    );
  }, o.intervalMs);
  poll.unref?.();

  return {
    close() {
      closed = true;
      if (debounce) clearTimeout(debounce);
      clearInterval(poll);
      for (const w of watchers) w.close();
    },
  };
}

/** A signature of one file that changes when it is rewritten or its symlink is pointed elsewhere; "absent" if missing. */
export async function fileSignature(path: string): Promise<string> {
  try {
    const s = await stat(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw e;
  }
}
