// Values many cached pods share (a node, a namespace, a scheduler, an app's label) are kept once per process
// (src/api/intern.ts): what a cached pod costs in the JS heap does not grow with how long those values are.

import { describe, expect, it } from 'vitest';
import { intern } from '../../src/api/intern.js';
import { MergedCache } from '../../src/cache/merged.js';
import { collectGarbage } from '../../src/api/gc.js';

describe('intern', () => {
  it('hands out one copy per value and stays correct past its bound', () => {
    const a = intern(['default', 'scheduler'].join('-'));
    expect(a).toBe('default-scheduler');
    // 70,000 distinct values: the table starts over once, and every answer is still its value.
    for (let i = 0; i < 70_000; i++) expect(intern(`node-${i}`)).toBe(`node-${i}`);
    expect(intern('default-scheduler')).toBe('default-scheduler');
  });
});

/**
 * A page of pods as a member lists it; every shared value `width` characters long but the namespace, which each
 * pod's key (namespace/name) spells out.
 */
function page(from: number, n: number, width: number): Buffer {
  const v = (s: string) => s.padEnd(width, 'x');
  const items = [];
  for (let i = from; i < from + n; i++) {
    items.push({
      metadata: { name: `pod-${i}`, namespace: `ns-${i % 3}`, resourceVersion: String(10 + i), labels: { 'app.kubernetes.io/name': v(`app-${i % 4}`), tier: v('web') } },
      spec: { nodeName: v(`node-${i % 7}`), restartPolicy: v('Always'), schedulerName: v('sched'), serviceAccountName: v('default'), containers: [{ name: 'c', image: 'i' }] },
      status: { phase: v('Running'), podIP: `10.0.${i >> 8}.${i & 255}` },
    });
  }
  return Buffer.from(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '5' }, items }));
}

/** JS heap bytes per pod that a cache holding n such pods keeps. */
function heapPerPod(n: number, width: number): number {
  const cache = new MergedCache({ instanceID: 't', windowSize: 10, dropManagedFields: true });
  const sink = cache.sink('member-1', 'pods');
  const pages = [];
  for (let from = 0; from < n; from += 500) pages.push(page(from, 500, width));
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  const list = sink.startList();
  for (const p of pages) list.addEncoded(sink.encodePage(p));
  list.end('5');
  pages.length = 0;
  collectGarbage();
  const after = process.memoryUsage().heapUsed;
  expect(cache.pods.size).toBe(n);
  return (after - before) / n;
}

describe('a cached pod in the JS heap', () => {
  it('holds its shared values once per process, whatever their length', () => {
    heapPerPod(2_000, 8); // the code paths warmed up
    const short = heapPerPod(20_000, 8);
    const long = heapPerPod(20_000, 48);
    // Seven values 40 characters longer: a copy of each per pod would be ~280 bytes more.
    expect(long - short, `short ${short.toFixed(0)} B, long ${long.toFixed(0)} B per pod`).toBeLessThan(60);
  });
});
