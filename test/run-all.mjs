#!/usr/bin/env node
// `npm test`: typecheck, then the unit, integration and real-cluster suites in that order, each through vitest,
// then one closing line with the totals. Exits non-zero if anything failed.
// The real-cluster suite needs Go (it builds kube-apiserver and etcd); without Go it says so in one line and is
// skipped, except under CI=true, where a missing Go is a failure (see test/e2e/require-go.ts).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const only = process.argv.slice(2);
const suites = ['unit', 'integration', 'e2e'].filter((s) => only.length === 0 || only.includes(s));
const out = mkdtempSync(join(tmpdir(), 'fleetgate-test-'));
const totals = { passed: 0, failed: 0, skipped: 0 };
let failedSteps = [];
// Named again at the very end: a CI log is often read from its tail, far below vitest's own failure report.
const failedTests = [];

function run(label, cmd, args) {
  console.log(`\n=== ${label}: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: process.env });
  if (r.status !== 0) failedSteps.push(label);
  return r.status === 0;
}

run('typecheck', 'npx', ['tsc', '-p', 'tsconfig.test.json', '--noEmit']);

for (const suite of suites) {
  const json = join(out, `${suite}.json`);
  run(`${suite} tests`, 'npx', ['vitest', 'run', '--project', suite, '--reporter=default', '--reporter=json', `--outputFile.json=${json}`]);
  try {
    const r = JSON.parse(readFileSync(json, 'utf8'));
    totals.passed += r.numPassedTests ?? 0;
    totals.failed += r.numFailedTests ?? 0;
    totals.skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    for (const file of r.testResults ?? []) {
      const where = relative(process.cwd(), file.name);
      // A file can fail with no test marked failed (an import error, a failed hook): name the file then.
      if (file.status === 'failed' && !(file.assertionResults ?? []).some((t) => t.status === 'failed')) {
        failedTests.push(`${suite}: ${where}\n    ${String(file.message ?? '').split('\n')[0].slice(0, 300)}`);
      }
      for (const t of file.assertionResults ?? []) {
        if (t.status !== 'failed') continue;
        const why = String(t.failureMessages?.[0] ?? '').split('\n')[0].slice(0, 300);
        failedTests.push(`${suite}: ${where} > ${t.fullName}${why ? `\n    ${why}` : ''}`);
      }
    }
    if ((r.numTotalTests ?? 0) === 0) {
      console.log(`!!! ${suite}: no test ran`);
      failedSteps.push(`${suite} (no test ran)`);
    }
  } catch {
    console.log(`!!! ${suite}: vitest wrote no results`);
    failedSteps.push(`${suite} (no results)`);
  }
}
rmSync(out, { recursive: true, force: true });

if (failedTests.length) console.log(`\nfailed tests:\n  ${failedTests.join('\n  ')}`);
if (failedSteps.length) console.log(`\nFAILED: ${failedSteps.join(', ')}`);
console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(failedSteps.length ? 1 : 0);
