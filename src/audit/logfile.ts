// The audit log file: JSON lines appended by one writer, rotated by size with a kept count (kube's
// --audit-log-maxsize and --audit-log-maxbackup, lumberjack's backup names). Durable writes are group-committed:
// every event queued while a write is in progress goes out in the next write, followed by one fdatasync, so a
// burst of mutations costs one sync rather than one each. Background events wait for a size or time threshold.

import { mkdir, open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { Logger } from 'pino';
import { throttledReporter, type Backend } from './backend.js';
import type { AuditMetrics } from './metrics.js';

export interface LogFileOptions {
  path: string;
  /** Rotate before the file would grow past this many bytes; 0 never rotates. */
  maxSizeBytes: number;
  /** Rotated files to keep; 0 keeps them all (lumberjack's MaxBackups). */
  maxBackups: number;
  /** Background events are written within this many milliseconds ... */
  flushIntervalMs: number;
  /** ... or as soon as this many bytes are waiting. */
  flushBytes: number;
}

export const LOG_FILE_DEFAULTS: Omit<LogFileOptions, 'path'> = {
  maxSizeBytes: 100 * 1024 * 1024,
  maxBackups: 10,
  flushIntervalMs: 100,
  flushBytes: 256 * 1024,
};

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

const BACKUP_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}(-\d+)?$/;

export function newLogFileBackend(opts: LogFileOptions, deps: { log: Logger; metrics: AuditMetrics }): Backend {
  const o = { ...LOG_FILE_DEFAULTS, ...opts };
  const errors = deps.metrics.errors.labels('log');
  const report = throttledReporter(5000, (err, lost) =>
    deps.log.error({ err: (err as Error).message, path: o.path, lostEvents: lost }, 'audit log: events could not be written'),
  );
  let fh: FileHandle | undefined;
  let size = 0;
  let needNewline = false; // a failed write may have left half a line behind
  const lines = newLineBuffers(o.flushBytes);
  let waiters: Waiter[] = [];
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closing = false;
  let closed = false;
  let timerFired = false; // the background interval has passed: write what is queued even if it is small

  async function openFile(): Promise<void> {
    await mkdir(dirname(o.path), { recursive: true, mode: 0o700 });
    const h = await open(o.path, 'a+', 0o600); // read too: the last byte tells whether a line was left unfinished
    try {
      size = (await h.stat()).size;
      needNewline = false;
      if (size > 0) {
        const last = Buffer.alloc(1);
        await h.read(last, 0, 1, size - 1);
        needNewline = last[0] !== 0x0a;
      }
    } catch (e) {
      await h.close().catch(() => {});
      throw e;
    }
    fh = h;
    await syncDir(dirname(o.path));
  }

  async function rotate(): Promise<void> {
    await fh!.close();
    fh = undefined;
    await rename(o.path, await backupPath(o.path, new Date()));
    await openFile();
    if (o.maxBackups > 0) await prune();
  }

  async function prune(): Promise<void> {
    const dir = dirname(o.path);
    const { prefix, ext } = nameParts(o.path);
    const backups = (await readdir(dir))
      .filter((n) => n.startsWith(prefix) && n.endsWith(ext) && BACKUP_TIME.test(n.slice(prefix.length, n.length - ext.length)))
      .sort();
    for (const n of backups.slice(0, Math.max(0, backups.length - o.maxBackups))) await rm(join(dir, n), { force: true });
  }

  async function writeBatch(body: Buffer, durable: boolean): Promise<void> {
    try {
      if (!fh) await openFile();
      if (o.maxSizeBytes > 0 && size > 0 && size + body.length > o.maxSizeBytes) await rotate();
      if (needNewline) {
        await writeAll(fh!, NEWLINE);
        size += 1;
      }
      needNewline = true; // until the write is known to be complete
      await writeAll(fh!, body);
      needNewline = false;
      size += body.length;
      if (durable) await fh!.datasync();
    } catch (e) {
      // Drop the handle: the next write reopens the file, which may have become writable again.
      const h = fh;
      fh = undefined;
      await h?.close().catch(() => {});
      throw e;
    }
  }

  async function run(): Promise<void> {
    try {
      while (lines.count > 0 && (waiters.length > 0 || lines.bytes >= o.flushBytes || closing || timerFired)) {
        timerFired = false;
        const batch = lines.take();
        const ws = waiters;
        waiters = [];
        try {
          await writeBatch(batch.bytes, ws.length > 0);
          for (const w of ws) w.resolve();
        } catch (e) {
          errors.inc(batch.count);
          report(e, batch.count);
          for (const w of ws) w.reject(e);
        } finally {
          lines.release(batch.buffer);
        }
      }
    } finally {
      running = undefined;
      if (lines.count > 0) schedule();
    }
  }

  function schedule(): void {
    if (running) return; // the running loop takes what is queued
    if (waiters.length > 0 || lines.bytes >= o.flushBytes || closing) {
      if (timer) clearTimeout(timer);
      timer = undefined;
      running = run();
      return;
    }
    timer ??= setTimeout(() => {
      timer = undefined;
      timerFired = true;
      if (!running) running = run();
    }, o.flushIntervalMs);
    timer.unref();
  }

  async function flush(): Promise<void> {
    while (running || lines.count > 0) {
      if (!running) {
        timerFired = true;
        if (timer) clearTimeout(timer);
        timer = undefined;
        running = run();
      }
      await running;
    }
  }

  return {
    plugin: 'log',
    gates: true,
    write(line, durable) {
      if (closed) {
        errors.inc();
        report(new Error('the audit log is closed'), 1);
        return durable ? Promise.reject(new Error('the audit log is closed')) : undefined;
      }
      lines.append(line);
      let p: Promise<void> | undefined;
      if (durable) p = new Promise<void>((resolve, reject) => waiters.push({ resolve, reject }));
      schedule();
      return p;
    },
    flush,
    async close() {
      if (closed) return;
      closing = true;
      await flush();
      closed = true;
      const h = fh;
      fh = undefined;
      await h?.close().catch(() => {});
    },
  };
}

const NEWLINE = Buffer.from('\n');

/**
 * All of b, at the end of the file (it is opened for appending). FileHandle.write, not writeFile: with writeFile each
 * batch left objects on V8's heap that lived through two young collections, ~6 MB a collection under a gateway
 * forwarding GETs at c=1 with the log at Metadata (node --trace-gc-nvp, Node 20; with write, ~3 KB as with the log
 * off), and every collection then copied them (pauses of 15-20 ms against 1-2 ms).
 */
async function writeAll(fh: FileHandle, b: Buffer): Promise<void> {
  let at = 0;
  while (at < b.length) {
    const { bytesWritten } = await fh.write(b, at, b.length - at);
    // A file takes at least a byte or fails (ENOSPC, EIO); nothing written would loop for ever.
    if (bytesWritten <= 0) throw new Error(`the audit log took none of ${b.length - at} bytes`);
    at += bytesWritten;
  }
}

interface LineBatch {
  /** The lines, each ending in a newline. */
  bytes: Buffer;
  count: number;
  /** What bytes is a view of: hand it back with release() once written. */
  buffer: Buffer;
}

/**
 * Lines encoded into a buffer as they are queued, and two such buffers taking turns: one fills while the other is
 * being written. A batch is hundreds of KB; joining its lines into one string, measuring it and encoding it again
 * cost three fresh allocations of that size per batch (V8 puts them among large objects, and on some machines
 * every page of fresh memory costs a fault), where reused buffers cost none once warm.
 */
function newLineBuffers(flushBytes: number): { readonly count: number; readonly bytes: number; append(line: string): void; take(): LineBatch; release(buffer: Buffer): void } {
  // A buffer that grew past this for a burst is let go after its batch rather than kept for the next.
  const keepAtMost = Math.max(4 * flushBytes, 1 << 20);
  const initial = Math.max(2 * flushBytes, 64 * 1024);
  let buf: Buffer = Buffer.allocUnsafeSlow(initial);
  let spare: Buffer | undefined;
  let used = 0;
  let count = 0;
  return {
    get count() {
      return count;
    },
    get bytes() {
      return used;
    },
    append(line) {
      // A UTF-16 code unit takes at most 3 bytes in UTF-8 (a surrogate pair, 2 units, takes 4).
      const most = line.length * 3 + 1;
      if (used + most > buf.length) {
        const bigger = Buffer.allocUnsafeSlow(Math.max(2 * buf.length, used + most));
        buf.copy(bigger, 0, 0, used);
        buf = bigger;
      }
      used += buf.write(line, used, 'utf8');
      buf[used++] = 0x0a;
      count++;
    },
    take() {
      const batch = { bytes: buf.subarray(0, used), count, buffer: buf };
      buf = spare ?? Buffer.allocUnsafeSlow(initial);
      spare = undefined;
      used = 0;
      count = 0;
      return batch;
    },
    release(buffer) {
      if (buffer.length <= keepAtMost && (spare === undefined || spare.length < buffer.length)) spare = buffer;
    },
  };
}

/** lumberjack: "audit.log" rotates to "audit-2006-01-02T15-04-05.000.log" (UTC); a clash gets "-N". */
async function backupPath(path: string, t: Date): Promise<string> {
  const { prefix, ext } = nameParts(path);
  const stamp = t.toISOString().slice(0, 23).replace(/:/g, '-');
  const dir = dirname(path);
  for (let n = 0; ; n++) {
    const candidate = join(dir, `${prefix}${stamp}${n === 0 ? '' : '-' + n}${ext}`);
    try {
      await stat(candidate);
    } catch {
      return candidate;
    }
  }
}

function nameParts(path: string): { prefix: string; ext: string } {
  const base = basename(path);
  const ext = extname(base);
  return { prefix: base.slice(0, base.length - ext.length) + '-', ext };
}

/** A new file's directory entry must be durable too, or a crash can lose the whole file. */
async function syncDir(dir: string): Promise<void> {
  let h: FileHandle | undefined;
  try {
    h = await open(dir, 'r');
    await h.sync();
  } catch {
    // Some filesystems refuse to sync a directory; the data itself is still synced.
  } finally {
    await h?.close().catch(() => {});
  }
}
