import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newLogFileBackend } from '../../src/audit/logfile.js';
import { newAuditMetrics, type AuditMetrics } from '../../src/audit/metrics.js';

let dir: string;
let metrics: AuditMetrics;
let registry: Registry;
const log = pino({ level: 'silent' });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-audit-log-'));
  registry = new Registry();
  metrics = newAuditMetrics(registry);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function errorCount(): Promise<number> {
  const m = await registry.getSingleMetric('apiserver_audit_error_total')!.get();
  return m.values.filter((v) => v.labels.plugin === 'log').reduce((a, v) => a + v.value, 0);
}

const line = (i: number) => JSON.stringify({ kind: 'Event', n: i, pad: 'x'.repeat(80) });

describe('audit log file', () => {
  it('a durable write is in the file when it resolves; background writes follow on flush, in order', async () => {
    const path = join(dir, 'sub', 'audit.log');
    const b = newLogFileBackend({ path, maxSizeBytes: 0, maxBackups: 0, flushIntervalMs: 60_000, flushBytes: 1 << 20 }, { log, metrics });
    expect(b.write(line(1), false)).toBeUndefined();
    await b.write(line(2), true);
    // The durable write carried the background one queued before it.
    expect((await readFile(path, 'utf8')).split('\n')).toEqual([line(1), line(2), '']);
    b.write(line(3), false);
    expect((await readFile(path, 'utf8')).split('\n').length).toBe(3);
    await b.flush();
    expect((await readFile(path, 'utf8')).split('\n')).toEqual([line(1), line(2), line(3), '']);
    await b.close();
  });

  it('group-commits concurrent durable writes', async () => {
    const path = join(dir, 'audit.log');
    const b = newLogFileBackend({ path, maxSizeBytes: 0, maxBackups: 0, flushIntervalMs: 50, flushBytes: 1 << 20 }, { log, metrics });
    await Promise.all(Array.from({ length: 50 }, (_, i) => b.write(line(i), true)));
    const lines = (await readFile(path, 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(50);
    expect(lines.map((l) => JSON.parse(l).n)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    await b.close();
  });

  it('background events are written after the interval without a flush', async () => {
    const path = join(dir, 'audit.log');
    const b = newLogFileBackend({ path, maxSizeBytes: 0, maxBackups: 0, flushIntervalMs: 20, flushBytes: 1 << 20 }, { log, metrics });
    b.write(line(1), false);
    const deadline = Date.now() + 5000;
    let text = '';
    while (Date.now() < deadline) {
      text = await readFile(path, 'utf8').catch(() => '');
      if (text) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(text).toBe(line(1) + '\n');
    await b.close();
  });

  it('rotates by size and keeps maxBackups rotated files, with lumberjack names', async () => {
    const path = join(dir, 'audit.log');
    const one = line(0).length + 1;
    const b = newLogFileBackend({ path, maxSizeBytes: one * 3 + 10, maxBackups: 2, flushIntervalMs: 60_000, flushBytes: 1 << 20 }, { log, metrics });
    for (let i = 0; i < 12; i++) await b.write(line(i), true);
    await b.close();
    const files = (await readdir(dir)).sort();
    expect(files).toHaveLength(3);
    expect(files).toContain('audit.log');
    const backups = files.filter((f) => f !== 'audit.log');
    for (const f of backups) expect(f).toMatch(/^audit-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}(-\d+)?\.log$/);
    // Newest events in the live file, the two newest rotations kept; nothing over the size limit.
    const current = (await readFile(path, 'utf8')).trim().split('\n').map((l) => JSON.parse(l).n);
    expect(current).toEqual([9, 10, 11]);
    const kept = (await Promise.all(backups.map((f) => readFile(join(dir, f), 'utf8')))).flatMap((t) => t.trim().split('\n').map((l) => JSON.parse(l).n));
    expect(kept.sort((a, b) => a - b)).toEqual([3, 4, 5, 6, 7, 8]);
  });

  it('an unwritable log rejects durable writes and counts every lost event', async () => {
    const path = join(dir, 'audit.log');
    await mkdir(path); // a directory where the file should be
    const b = newLogFileBackend({ path, maxSizeBytes: 0, maxBackups: 0, flushIntervalMs: 60_000, flushBytes: 1 << 20 }, { log, metrics });
    b.write(line(1), false);
    await expect(b.write(line(2), true)).rejects.toThrow(/EISDIR/);
    b.write(line(3), false);
    await b.flush();
    expect(await errorCount()).toBe(3);
    // It heals when the path becomes writable.
    await rm(path, { recursive: true });
    await b.write(line(4), true);
    expect(await readFile(path, 'utf8')).toBe(line(4) + '\n');
    await b.close();
    // Closed: writes fail.
    await expect(b.write(line(5), true)).rejects.toThrow('closed');
  });

  it('lines of any size and script arrive whole and in order while one batch fills and another is written', async () => {
    const path = join(dir, 'audit.log');
    // flushBytes 1 KiB: the batch buffers start at 64 KiB, so the long lines below make them grow.
    const b = newLogFileBackend({ path, maxSizeBytes: 0, maxBackups: 0, flushIntervalMs: 5, flushBytes: 1024 }, { log, metrics });
    const texts = ['plain', 'Grüße, ünïcödé', '日本語のユーザー', 'emoji 🚀 and a lone surrogate \ud800 escaped', 'y'.repeat(200 * 1024), '€'.repeat(40_000)];
    const want: string[] = [];
    const durable: Promise<void>[] = [];
    for (let i = 0; i < 600; i++) {
      const l = JSON.stringify({ n: i, user: texts[i % texts.length] });
      want.push(l);
      // Every seventh write is durable, so batches are cut and written while later lines are being queued.
      const p = b.write(l, i % 7 === 0);
      if (p) durable.push(p);
      if (i % 50 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(durable);
    await b.close();
    const got = (await readFile(path, 'utf8')).split('\n');
    expect(got.pop()).toBe('');
    expect(got.length).toBe(want.length);
    for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) expect.fail(`line ${i} differs: ${got[i]!.slice(0, 80)} vs ${want[i]!.slice(0, 80)}`);
    expect(await errorCount()).toBe(0);
  });

  it('a file left with half a line gets a newline before the next event', async () => {
    const path = join(dir, 'audit.log');
    await writeFile(path, '{"half":');
    const b = newLogFileBackend({ path, maxSizeBytes: 0, maxBackups: 0, flushIntervalMs: 60_000, flushBytes: 1 << 20 }, { log, metrics });
    await b.write(line(1), true);
    await b.close();
    expect(await readFile(path, 'utf8')).toBe('{"half":\n' + line(1) + '\n');
  });
});
