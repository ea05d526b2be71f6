// The harness's last lines of defence against leftovers, without starting clusters: the stale-run sweeper and
// the watchdog that cleans up after a test process killed with SIGKILL.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startWatchdog, sweepStaleRuns } from './cluster.js';

const started: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(() => {
  for (const c of started.splice(0)) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A detached process group (sh + sleep) whose leader's command line mentions `mention`. */
function group(mention: string): ChildProcess {
  const c = spawn('sh', ['-c', 'sleep 300; true', 'fleetgate-test-group', mention], { detached: true, stdio: 'ignore' });
  started.push(c);
  return c;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function deadPid(): Promise<number> {
  const c = spawn('true');
  await new Promise((r) => c.once('exit', r));
  return c.pid!;
}

function fakeFleetDir(owner: number, groups: number[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-e2e-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'owner'), `${owner}\n`);
  writeFileSync(join(dir, 'pgids'), groups.map((g) => `${g}\n`).join(''));
  return dir;
}

describe('stale-run sweeper', () => {
  it('kills the groups of a run whose owner is gone and removes its dir, sparing recycled pids', async () => {
    const dir = fakeFleetDir(await deadPid(), []);
    const leftover = group(dir);
    const unrelated = group('/somewhere/else');
    writeFileSync(join(dir, 'pgids'), `${leftover.pid}\n${unrelated.pid}\n`);
    await until(() => alive(leftover.pid!) && alive(unrelated.pid!), 5_000, 'test groups to start');

    const swept = sweepStaleRuns();
    expect(swept.dirs).toContain(dir);
    // Other crashed runs on this machine may be swept too; what matters is which of ours were hit.
    expect(swept.groups).toContain(leftover.pid);
    expect(swept.groups).not.toContain(unrelated.pid);
    expect(existsSync(dir)).toBe(false);
    await until(() => leftover.exitCode !== null || leftover.signalCode !== null, 5_000, 'the leftover to die');
    expect(leftover.signalCode).toBe('SIGKILL');
    expect(alive(unrelated.pid!)).toBe(true);
  });

  it('leaves a run alone while its owner process lives', () => {
    // The vitest main process is a live node process, as a concurrent test run's worker would be.
    const dir = fakeFleetDir(process.ppid, []);
    sweepStaleRuns();
    expect(existsSync(dir)).toBe(true);
  });
});

describe('watchdog', () => {
  it('kills recorded groups and removes the dir once the owner dies', async () => {
    const owner = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    started.push(owner);
    const dir = fakeFleetDir(owner.pid!, []);
    const g = group(dir);
    writeFileSync(join(dir, 'pgids'), `${g.pid}\n`);
    const watchdog = startWatchdog(dir, owner.pid!)!;
    await new Promise((r) => setTimeout(r, 1_200));
    expect(alive(g.pid!)).toBe(true);
    expect(existsSync(dir)).toBe(true);

    process.kill(-owner.pid!, 'SIGKILL');
    await until(() => !existsSync(dir), 5_000, 'the watchdog to remove the dir');
    await until(() => g.signalCode !== null, 5_000, 'the recorded group to be killed');
    expect(g.signalCode).toBe('SIGKILL');
    await until(() => !alive(watchdog), 5_000, 'the watchdog to end');
  });

  it('ends by itself when the dir is removed by a normal teardown', async () => {
    const dir = fakeFleetDir(process.pid, []);
    const watchdog = startWatchdog(dir)!;
    expect(alive(watchdog)).toBe(true);
    rmSync(dir, { recursive: true });
    await until(() => !alive(watchdog), 5_000, 'the watchdog to end');
  });
});
