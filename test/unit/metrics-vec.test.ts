// The metric vectors (src/metrics/vec.ts) held to prom-client's own metrics: the same operations must export the
// same text, so a scraper cannot tell which recorded them; and a child bound once keeps recording into its series.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CounterVec, GaugeVec, HistogramVec } from '../../src/metrics/vec.js';

const BUCKETS = [0.005, 0.025, 0.1, 1, 10];

/** Runs the same operations against prom-client's metrics and against the vectors; returns both exports. */
async function both(ops: (m: { counter: any; unlabelled: any; gauge: any; histogram: any; plainHistogram: any }) => void): Promise<[string, string]> {
  const theirs = new Registry();
  const ours = new Registry();
  ops({
    counter: new Counter({ name: 'c_total', help: 'a counter', labelNames: ['verb', 'code'], registers: [theirs] }),
    unlabelled: new Counter({ name: 'u_total', help: 'no labels', registers: [theirs] }),
    gauge: new Gauge({ name: 'g', help: 'a gauge', labelNames: ['kind'], registers: [theirs] }),
    histogram: new Histogram({ name: 'h_seconds', help: 'a histogram', labelNames: ['verb', 'resource'], buckets: BUCKETS, registers: [theirs] }),
    plainHistogram: new Histogram({ name: 'p', help: 'unlabelled histogram', buckets: [1, 2], registers: [theirs] }),
  });
  ops({
    counter: new CounterVec({ name: 'c_total', help: 'a counter', labelNames: ['verb', 'code'], registers: [ours] }),
    unlabelled: new CounterVec({ name: 'u_total', help: 'no labels', registers: [ours] }),
    gauge: new GaugeVec({ name: 'g', help: 'a gauge', labelNames: ['kind'], registers: [ours] }),
    histogram: new HistogramVec({ name: 'h_seconds', help: 'a histogram', labelNames: ['verb', 'resource'], buckets: BUCKETS, registers: [ours] }),
    plainHistogram: new HistogramVec({ name: 'p', help: 'unlabelled histogram', buckets: [1, 2], registers: [ours] }),
  });
  return [await theirs.metrics(), await ours.metrics()];
}

describe('metric vectors', () => {
  it('export what prom-client exports before anything is recorded', async () => {
    const [theirs, ours] = await both(() => {});
    expect(ours).toBe(theirs);
    expect(ours).toContain('u_total 0');
    expect(ours).toContain('p_bucket{le="+Inf"} 0');
  });

  it('export what prom-client exports for the same operations, by label set or through bound children', async () => {
    const [theirs, ours] = await both((m) => {
      m.counter.inc({ verb: 'GET', code: '200' });
      m.counter.inc({ verb: 'GET', code: '200' }, 2);
      m.counter.labels('LIST', '429').inc();
      const bound = m.counter.labels('GET', '200');
      bound.inc(0);
      bound.inc(4);
      m.unlabelled.inc();
      m.unlabelled.inc(3);
      m.gauge.inc({ kind: 'readOnly' });
      m.gauge.inc({ kind: 'readOnly' });
      m.gauge.dec({ kind: 'readOnly' });
      m.gauge.set({ kind: 'mutating' }, 7);
      m.gauge.labels('watch').inc(5);
      m.gauge.labels('watch').dec(2);
      // A value on a bound, between bounds, above all of them, and zero.
      for (const v of [0.005, 0.01, 0.5, 99, 0]) m.histogram.observe({ verb: 'GET', resource: 'pods' }, v);
      const h = m.histogram.labels('LIST', 'events');
      h.observe(0.2);
      h.observe(1);
      m.plainHistogram.observe(1.5);
      // Label values that need escaping in the text format.
      m.counter.inc({ verb: 'we"ird\\', code: 'a\nb' });
    });
    expect(ours).toBe(theirs);
    expect(ours).toContain('c_total{verb="GET",code="200"} 7');
    expect(ours).toContain('h_seconds_bucket{le="0.025",verb="GET",resource="pods"} 3');
    expect(ours).toContain('h_seconds_count{verb="GET",resource="pods"} 5');
  });

  it('reset and remove forget series as prom-client does', async () => {
    const [theirs, ours] = await both((m) => {
      m.gauge.set({ kind: 'a' }, 1);
      m.gauge.set({ kind: 'b' }, 2);
      m.gauge.remove('a');
      m.counter.inc({ verb: 'GET', code: '200' });
      m.counter.reset();
      m.counter.inc({ verb: 'PUT', code: '201' });
      m.unlabelled.inc(5);
      m.unlabelled.reset();
      m.histogram.observe({ verb: 'GET', resource: 'pods' }, 1);
      m.histogram.reset();
    });
    expect(ours).toBe(theirs);
    expect(ours).not.toContain('kind="a"');
    expect(ours).toContain('u_total 0');
  });

  it('get() gives every value its labels in one object, as prom-client does (exemplars aside: none are kept)', async () => {
    const theirs = new Histogram({ name: 'x', help: 'x', labelNames: ['verb'], buckets: [1], registers: [] });
    const ours = new HistogramVec({ name: 'x', help: 'x', labelNames: ['verb'], buckets: [1] });
    for (const h of [theirs, ours]) h.observe({ verb: 'GET' }, 0.5);
    const expected = await theirs.get();
    expected.values = expected.values.map((v) => {
      const { exemplar: _e, ...rest } = v as typeof v & { exemplar?: unknown };
      return rest;
    });
    expect(await ours.get()).toEqual(expected);
  });

  it('runs collect before every export', async () => {
    const r = new Registry();
    let n = 0;
    const g: GaugeVec<'cluster'> = new GaugeVec({
      name: 'members',
      help: 'h',
      labelNames: ['cluster'],
      registers: [r],
      collect: () => {
        n++;
        g.set({ cluster: `m${n}` }, n);
      },
    });
    expect(await r.metrics()).toContain('members{cluster="m1"} 1');
    expect(await r.metrics()).toContain('members{cluster="m2"} 2');
  });

  it('keeps label sets apart whatever their values hold, separators included', async () => {
    const r = new Registry();
    const c = new CounterVec({ name: 'c', help: 'h', labelNames: ['a', 'b'], registers: [r] });
    // Joined naively, all three are the same key.
    c.inc({ a: 'x\u0000y', b: 'z' });
    c.inc({ a: 'x', b: 'y\u0000z' }, 2);
    c.labels('x\u0001', 'y').inc(4);
    c.labels('x', 'y\u0000z').inc(8);
    const values = (await c.get()).values.map((v) => [v.labels.a, v.labels.b, v.value]);
    expect(values).toEqual([
      ['x\u0000y', 'z', 1],
      ['x', 'y\u0000z', 10],
      ['x\u0001', 'y', 4],
    ]);
  });

  it('finds a series again by its values: one child per label set, numbers and their text alike, none kept for a removed one', async () => {
    const r = new Registry();
    const c = new CounterVec({ name: 'c', help: 'h', labelNames: ['verb', 'code'], registers: [r] });
    const child = c.labels('GET', 200);
    expect(c.labels('GET', 200)).toBe(child);
    expect(c.labels('GET', '200')).toBe(child);
    expect(c.labels('GET', 201)).not.toBe(child);
    expect(c.labels('GE', 'T200')).not.toBe(child);
    child.inc(3);
    c.remove('GET', '200');
    const again = c.labels('GET', 200);
    expect(again).not.toBe(child);
    again.inc();
    expect(await r.metrics()).toContain('c{verb="GET",code="200"} 1');
    const none = new CounterVec({ name: 'n', help: 'h' });
    expect(none.labels()).toBe(none.labels());
  });

  it('past maxSeries, the label sets sent to the overflow series are not kept', () => {
    const c = new CounterVec({ name: 'c', help: 'h', labelNames: ['a', 'b'], maxSeries: 1 });
    c.labels('kept', 'x').inc();
    for (let i = 0; i < 100; i++) c.labels(`past-${i}`, 'x').inc();
    const index = (c as unknown as { index: Map<string, unknown> }).index;
    expect([...index.keys()]).toEqual(['kept']);
  });

  it('past maxSeries, new label sets count in one overflow series; the ones it has keep counting', async () => {
    const r = new Registry();
    const c = new CounterVec({ name: 'c', help: 'h', labelNames: ['a', 'b'], maxSeries: 2, registers: [r] });
    const h = new HistogramVec({ name: 'h', help: 'h', labelNames: ['a'], buckets: [1], maxSeries: 1, registers: [r] });
    c.inc({ a: '1', b: 'x' });
    c.labels('2', 'x').inc();
    c.inc({ a: '3', b: 'x' });
    c.labels('4', 'x').inc(2);
    c.inc({ a: '1', b: 'x' });
    h.observe({ a: 'kept' }, 0.5);
    h.observe({ a: 'past' }, 2);
    const text = await r.metrics();
    expect(text).toContain('c{a="1",b="x"} 2');
    expect(text).toContain('c{a="2",b="x"} 1');
    expect(text).toContain('c{a="overflow",b="overflow"} 3');
    expect(text).not.toContain('a="3"');
    expect(text).toContain('h_count{a="kept"} 1');
    expect(text).toContain('h_bucket{le="+Inf",a="overflow"} 1');
    c.reset();
    c.inc({ a: '5', b: 'x' });
    expect(await r.metrics()).not.toContain('overflow",b');
  });

  it('refuses what prom-client refuses: unknown labels, counters going down, values that are not finite', () => {
    const c = new CounterVec({ name: 'c', help: 'h', labelNames: ['verb'] });
    expect(() => c.inc({ nope: 'x' } as never)).toThrow(/label "nope"/);
    expect(() => c.inc({ verb: 'GET' }, -1)).toThrow(/only goes up/);
    expect(() => c.labels('GET').inc(Number.NaN)).toThrow();
    expect(() => c.labels('GET', 'extra')).toThrow(/2 label values/);
    const h = new HistogramVec({ name: 'h', help: 'h', buckets: [1] });
    expect(() => h.observe(Number.POSITIVE_INFINITY)).toThrow(/finite/);
  });
});
