// Micro-benchmark of Table rows as the gateway builds them from its cache (scenario 2's kubectl pages): realistic
// pods from the sim's generator, stored as the merged cache stores them (cluster label, our resourceVersion, UTF-8
// JSON bytes), printed with the pod printer plus the CLUSTER column, includeObject=Metadata.
//
//   npx tsx test/bench/table-rows.ts [pods=3000] [rounds=15] [variant]
//
// With a variant (a prefix of its name: "old", "new"), only that one runs and the steps are skipped: for a CPU
// profile of one path (node --cpu-prof --import tsx test/bench/table-rows.ts 3000 40 old).
//
// Prints per-row µs for each step and for whole rows, medians of rounds that alternate between the variants, and
// checks that every variant writes the same bytes.

import { withClusterColumn, printerFor } from '../../src/api/printers/index.js';
import { partialObjectMetadataJson, tableRowJson, tableRowFromJson } from '../../src/api/table.js';
import { goJson } from '../../src/api/status.js';
import { clusterOf, CLUSTER_LABEL } from '../../src/cache/merged.js';
import { generatePod } from '../sim/podgen.js';

const N = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 15);
const ONLY = process.argv[4];

// As test/sim/fleet.ts seedPods makes them, at the gateway: one member's pods, an hour old.
const apps = ['web', 'api', 'worker', 'cache', 'batch'];
const namespaces = ['load', 'load-2', 'load-3'];
const created = new Date(Date.now() - 3600_000);
const stored: Buffer[] = [];
for (let i = 0; i < N; i++) {
  const phase = i % 50 === 0 ? 'Pending' : i % 97 === 0 ? 'Failed' : 'Running';
  const { pod, status } = generatePod({ namespace: namespaces[i % 3]!, app: apps[i % apps.length]!, index: i, node: `member-001-node-${(i % 10) + 1}`, phase }, created);
  (pod as any).status = status;
  pod.metadata!.labels![CLUSTER_LABEL] = 'member-001';
  pod.metadata!.resourceVersion = String(100_000 + i);
  pod.metadata!.uid = `${(i * 2654435761) >>> 0}-0000-4000-8000-000000000000`;
  stored.push(Buffer.from(JSON.stringify(pod)));
}
const avgBytes = stored.reduce((a, b) => a + b.length, 0) / N;

const p = withClusterColumn(printerFor('', 'pods'), clusterOf);
const now = Date.now();

type Variant = { name: string; row: (b: Buffer) => string };
const texts = stored.map((b) => b.toString('utf8'));
const objs = texts.map((t) => JSON.parse(t));
const cellsOf = objs.map((o) => p.cells(o, now));

// Steps of the old row, each over all pods (inputs prepared outside the timing where the step does not make them).
const steps: { name: string; run: () => number }[] = [
  { name: 'decode (buffer.toString)', run: () => sum(stored, (b) => b.toString('utf8').length) },
  { name: 'JSON.parse', run: () => sum(texts, (t) => (JSON.parse(t) ? 1 : 0)) },
  { name: 'cells', run: () => sum(objs, (o) => p.cells(o, now).length) },
  { name: 'conditions', run: () => sum(objs, (o) => (p.conditions?.(o) ? 1 : 0)) },
  { name: 'goJson(cells)', run: () => sum(cellsOf, (c) => goJson(c).length) },
  { name: 'partialObjectMetadataJson', run: () => sum(objs, (o) => partialObjectMetadataJson(o).length) },
];

const allVariants: Variant[] = [
  { name: 'old: tableRowJson(JSON.parse(text))', row: (b) => tableRowJson(p, JSON.parse(b.toString('utf8')), '', 'Metadata', now) },
  { name: 'new: tableRowFromJson(bytes)', row: (b) => tableRowFromJson(p, b, 'Metadata', now) },
  { name: 'new: tableRowFromJson(text)', row: (b) => tableRowFromJson(p, b.toString('utf8'), 'Metadata', now) },
];

const variants = ONLY ? allVariants.filter((v) => v.name.startsWith(ONLY)) : allVariants;
if (ONLY) steps.length = 0;

function sum<T>(xs: readonly T[], f: (x: T) => number): number {
  let s = 0;
  for (const x of xs) s += f(x);
  return s;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function timeUs(f: () => unknown): number {
  const t0 = performance.now();
  f();
  return ((performance.now() - t0) * 1000) / N;
}

// Same bytes, every pod, every include form.
for (const include of ['Metadata', 'None', 'Object'] as const) {
  for (let i = 0; i < N; i++) {
    const want = tableRowJson(p, objs[i], texts[i]!, include, now);
    const got = tableRowFromJson(p, stored[i]!, include, now);
    if (got !== want) throw new Error(`row ${i} (${include}) differs:\n${want}\n${got}`);
  }
}

console.log(`${N} pods, ${Math.round(avgBytes)} bytes of JSON each on average; ${ROUNDS} rounds, µs per row (median / min / max)`);
const stepTimes = steps.map(() => [] as number[]);
const variantTimes = variants.map(() => [] as number[]);
for (let r = 0; r < ROUNDS; r++) {
  // Alternate the order each round, so drift of the shared machine falls on all variants alike.
  const order = r % 2 === 0 ? variants.map((_, i) => i) : variants.map((_, i) => variants.length - 1 - i);
  for (const i of order) {
    const v = variants[i]!;
    variantTimes[i]!.push(timeUs(() => sum(stored, (b) => v.row(b).length)));
  }
  steps.forEach((s, i) => stepTimes[i]!.push(timeUs(s.run)));
}
const fmt = (xs: number[]) => `${median(xs).toFixed(2)} / ${Math.min(...xs).toFixed(2)} / ${Math.max(...xs).toFixed(2)}`;
for (let i = 0; i < steps.length; i++) console.log(`  step ${steps[i]!.name.padEnd(40)} ${fmt(stepTimes[i]!)}`);
for (let i = 0; i < variants.length; i++) console.log(`  row  ${variants[i]!.name.padEnd(40)} ${fmt(variantTimes[i]!)}`);
