// Tests that run the built `fleetgate` command (bin/fleetgate.js over dist/) rebuild it when any source it is
// compiled from is newer than the build.

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin/fleetgate.js');
const BUILT = join(ROOT, 'dist/src/cli/main.js');

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p));
    else if (e.name.endsWith('.ts')) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

export function ensureBuilt(): void {
  const sources = Math.max(newest(join(ROOT, 'src')), newest(join(ROOT, 'test/sim')));
  if (existsSync(BUILT) && statSync(BUILT).mtimeMs >= sources) return;
  // tsc emits even when some file does not typecheck; judge by the output (npm test typechecks separately).
  spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(BUILT) || statSync(BUILT).mtimeMs < sources) throw new Error(`building ${BUILT} with tsc failed`);
}
