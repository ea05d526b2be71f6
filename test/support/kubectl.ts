// Runs real kubectl binaries (several versions are installed side by side) against a kubeconfig.

import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type KubectlVersion = '1.27' | '1.28' | '1.29' | '1.30' | '1.31' | '1.32' | '1.33';

export function kubectlPath(v: KubectlVersion): string {
  const p = `/usr/lib/google-cloud-sdk/bin/kubectl.${v}`;
  if (!existsSync(p)) throw new Error(`kubectl ${v} is not installed at ${p}`);
  return p;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

// A private cache dir per test process: kubectl's discovery cache must not leak between servers that reuse ports.
const cacheDir = mkdtempSync(join(tmpdir(), 'fleetgate-kubectl-cache-'));
process.once('exit', () => rmSync(cacheDir, { recursive: true, force: true }));

export function kubectl(v: KubectlVersion, kubeconfig: string, args: string[], opts: { stdin?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = execFile(
      kubectlPath(v),
      ['--kubeconfig', kubeconfig, '--cache-dir', join(cacheDir, v), ...args],
      { timeout: opts.timeoutMs ?? 60_000, env: { ...process.env, HOME: cacheDir, ...opts.env }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as any).code === 'number' ? (err as any).code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
  });
}

/** Blanks the AGE column (and other time-derived cells) so outputs of two servers compare. */
export function withoutAge(table: string): string {
  const lines = table.trimEnd().split('\n');
  if (lines.length === 0) return '';
  const header = lines[0];
  const cols = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], start: m.index! }));
  const timeCols = cols.filter((c) => ['AGE', 'LAST SEEN', 'FIRST SEEN'].includes(c.name));
  // kubectl's tabwriter starts every cell of a column where the header's starts, so cells are cut at the header's
  // positions: splitting on runs of spaces instead merged an empty cell (an event without SUBOBJECT) into its
  // neighbours and shifted the rest, leaving that row's FIRST SEEN compared as text.
  return lines
    .map((line) =>
      cols
        .map((c, i) => {
          const cell = line.slice(c.start, i + 1 < cols.length ? cols[i + 1]!.start : undefined).trim();
          return timeCols.includes(c) ? '<age>' : cell.replace(/\((\d+[smhd])+ ago\)/, '(<age> ago)');
        })
        .join(' | '),
    )
    .join('\n');
}
