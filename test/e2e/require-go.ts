// The real-cluster suites build kube-apiserver, etcd and client-go programs with Go. Without Go they are
// skipped with one clear line, except in CI (CI=true), where a missing Go must fail the run instead of
// silently passing with nothing tested.

import { accessSync, closeSync, constants, openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** Absolute path of the go binary on PATH, or undefined. */
export function findGo(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, 'go');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/**
 * Says the skip line once per test run, not once per test file: vitest runs each file in its own worker
 * process, so the workers agree through a marker file named after their common parent (the vitest process).
 */
function announceOnce(line: string): void {
  const prefix = 'fleetgate-go-missing-';
  for (const f of safeReaddir(tmpdir())) {
    const pid = Number(f.slice(prefix.length));
    if (f.startsWith(prefix) && pid !== process.ppid && !alive(pid)) rmSync(join(tmpdir(), f), { force: true });
  }
  try {
    closeSync(openSync(join(tmpdir(), prefix + process.ppid), 'wx'));
  } catch {
    return; // another worker of this run said it already
  }
  console.log(line);
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True when the real-cluster suite can run. When Go is missing: prints the skip line once per process and
 * returns false, or throws under CI=true so the file fails. Use as `describe.skipIf(!requireGo())(...)`.
 */
export function requireGo(): boolean {
  if (findGo()) return true;
  if (process.env.CI === 'true') {
    throw new Error('real-cluster suite cannot run: go not found on PATH (CI=true requires it)');
  }
  announceOnce('real-cluster suite skipped: go not found');
  return false;
}
