// Metric vectors, named as k8s.io/component-base/metrics names them (CounterVec, GaugeVec, HistogramVec), exported
// through prom-client's Registry: its text format, its default process metrics and /metrics stay as they are.
//
// Why not prom-client's own Counter, Gauge and Histogram: every inc/observe (even through .labels()) turns the
// label set into a string key and checks every label name again. A request records about fourteen series (request
// metrics, flow control, audit); on a GET served from the cache that was a tenth of the gateway thread's time and
// ~4.5 KB of garbage per request. Here a label set is looked up once (or, for a pre-bound child, never) and a
// child then adds to plain numbers.

import type { Registry } from 'prom-client';

type LabelValue = string | number;
export type LabelSet<L extends string> = Partial<Record<L, LabelValue>>;

/** What prom-client's Registry reads of a metric (its get/getForPromString shape). */
interface ExportedValue {
  labels: Record<string, LabelValue>;
  sharedLabels?: Record<string, LabelValue>;
  value: number;
  metricName?: string;
}

interface ExportedMetric {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  values: ExportedValue[];
  aggregator: 'sum';
}

export interface VecOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  registers?: Registry[];
  /** Called before every export: the place to set gauges that describe the present (prom-client's collect). */
  collect?: () => void | Promise<void>;
  /**
   * At most this many label sets. For metrics whose label values come from requests (a resource name is whatever
   * path a caller sends): past the limit, a new label set is counted in one series whose every label is
   * "overflow" (as OpenTelemetry's cardinality limit does), so totals stay right and memory stays bounded.
   */
  maxSeries?: number;
}

/** The label value of the series that takes label sets past VecOptions.maxSeries. */
export const OVERFLOW = 'overflow';

interface Series<C> {
  labels: Record<string, LabelValue>;
  child: C;
}

/** The value of a call that names labels (the second argument) or passes only a value (the first). */
function valueOf(labels: unknown, value: number | undefined): number | undefined {
  return typeof labels === 'number' ? labels : value;
}

/**
 * One series' key: a lone value is its own key; several are joined by U+0000. Values come from requests too (a
 * resource name is percent-decoded from the path, so it can hold U+0000): a set with U+0000 or U+0001 in a value
 * is keyed by its JSON after U+0001 instead, which no joined key starts with, so no two label sets share a series.
 */
function seriesKey(values: readonly LabelValue[]): string {
  if (values.length === 1) return String(values[0]);
  for (const v of values) {
    if (typeof v === 'string' && (v.includes('\u0000') || v.includes('\u0001'))) return '\u0001' + JSON.stringify(values);
  }
  return values.join('\u0000');
}

/** A value as the index keys it: numbers as their text, so 200 and "200" are one series, as in seriesKey. */
function indexKey(v: LabelValue): string {
  return typeof v === 'string' ? v : String(v);
}

/** The key of the last label's value ('' for a metric without labels). */
function lastIndexKey(values: readonly LabelValue[]): string {
  return values.length === 0 ? '' : indexKey(values[values.length - 1]!);
}

abstract class Vec<L extends string, C> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly aggregator = 'sum' as const;
  collect?: () => void | Promise<void>;
  protected series = new Map<string, Series<C>>();
  /**
   * The same series found by their values one label at a time, without making a key: a joined key was a fresh
   * string to build, check and hash on every call (~6,000 instructions a request for apiserver_request_total and
   * apiserver_request_duration_seconds, nine and eight labels). Holds only series in `series`, so it is bounded
   * by maxSeries too; a lookup that misses takes the keyed path.
   */
  private index = new Map<string, unknown>();
  private readonly maxSeries: number;
  private overflow: Series<C> | undefined = undefined;

  constructor(o: VecOptions<L>) {
    this.name = o.name;
    this.help = o.help;
    this.labelNames = o.labelNames ?? [];
    this.collect = o.collect;
    this.maxSeries = o.maxSeries ?? Infinity;
    for (const r of o.registers ?? []) r.registerMetric(this as never);
  }

  protected abstract newChild(): C;

  /** The child for these label values, in labelNames order; keep it where the same series is recorded often. */
  labels(...values: LabelValue[]): C {
    if (values.length !== this.labelNames.length) {
      throw new Error(`metric ${this.name}: ${values.length} label values for the labels ${this.labelNames.join(', ')}`);
    }
    const found = this.indexLevel(values, false)?.get(lastIndexKey(values)) as Series<C> | undefined;
    return found !== undefined ? found.child : this.keyed(values);
  }

  /** The index's map for the last label of values (made on the way when create), or undefined. */
  private indexLevel(values: readonly LabelValue[], create: boolean): Map<string, unknown> | undefined {
    let node = this.index;
    for (let i = 0; i < values.length - 1; i++) {
      const k = indexKey(values[i]!);
      let next = node.get(k) as Map<string, unknown> | undefined;
      if (next === undefined) {
        if (!create) return undefined;
        node.set(k, (next = new Map()));
      }
      node = next;
    }
    return node;
  }

  /** The series by its joined key, made when new; indexed unless it is the overflow series. */
  private keyed(values: readonly LabelValue[]): C {
    const key = seriesKey(values);
    let s = this.series.get(key);
    if (!s) {
      if (this.series.size >= this.maxSeries) return this.overflowChild();
      const labels: Record<string, LabelValue> = {};
      for (let i = 0; i < values.length; i++) labels[this.labelNames[i]!] = values[i]!;
      s = { labels, child: this.newChild() };
      this.series.set(key, s);
    }
    this.indexLevel(values, true)!.set(lastIndexKey(values), s);
    return s.child;
  }

  /** The series past maxSeries, exported after the others. */
  private overflowChild(): C {
    if (!this.overflow) {
      const labels: Record<string, LabelValue> = {};
      for (const n of this.labelNames) labels[n] = OVERFLOW;
      this.overflow = { labels, child: this.newChild() };
    }
    return this.overflow.child;
  }

  /** Every series, the overflow one last. */
  protected allSeries(): Series<C>[] {
    const all = [...this.series.values()];
    if (this.overflow) all.push(this.overflow);
    return all;
  }

  /** The child for a label set given by name (a label left out is empty). */
  protected of(set: LabelSet<L> | undefined): C {
    const names = this.labelNames;
    if (set) {
      for (const k in set) {
        if (!(names as readonly string[]).includes(k)) throw new Error(`metric ${this.name}: label "${k}" is not one of ${names.join(', ')}`);
      }
    }
    const values: LabelValue[] = new Array(names.length);
    for (let i = 0; i < names.length; i++) values[i] = set?.[names[i]!] ?? '';
    return this.labels(...values);
  }

  /** The child a call means: one that names labels, or one that passes only a value (a metric without labels). */
  protected childOf(labels: LabelSet<L> | number | undefined): C {
    return this.of(typeof labels === 'number' ? undefined : labels);
  }

  /** Removes one series, named by its label values. */
  remove(...values: LabelValue[]): void {
    this.series.delete(seriesKey(values));
    // Rare: the index is made again as series are asked for.
    this.index.clear();
  }

  /** Forgets every series (a metric without labels starts again at zero). */
  reset(): void {
    this.series.clear();
    this.index.clear();
    this.overflow = undefined;
  }

  protected abstract values(): ExportedValue[];
  abstract get type(): ExportedMetric['type'];

  async getForPromString(): Promise<ExportedMetric> {
    if (this.collect) await this.collect();
    // A metric without labels has its one series from the start, at zero, as prom-client's do.
    if (this.labelNames.length === 0) this.labels();
    return { name: this.name, help: this.help, type: this.type, values: this.values(), aggregator: this.aggregator };
  }

  /** As prom-client's get(): every value's labels in one object. */
  async get(): Promise<ExportedMetric> {
    const m = await this.getForPromString();
    m.values = m.values.map(({ sharedLabels, labels, ...v }) => ({ ...v, labels: { ...labels, ...sharedLabels } }));
    return m;
  }
}

/** A vector whose series each hold one value (counters, gauges). */
abstract class ScalarVec<L extends string, C extends { value: number }> extends Vec<L, C> {
  protected values(): ExportedValue[] {
    return this.allSeries().map((s) => ({ labels: s.labels, value: s.child.value }));
  }
}

export interface CounterChild {
  inc(value?: number): void;
}

class CounterSeries implements CounterChild {
  value = 0;
  inc(value = 1): void {
    if (!(value >= 0) || value === Infinity) throw new Error(`a counter only goes up by a finite amount, not ${value}`);
    this.value += value;
  }
}

export class CounterVec<L extends string = never> extends ScalarVec<L, CounterSeries> {
  get type(): 'counter' {
    return 'counter';
  }

  protected newChild(): CounterSeries {
    return new CounterSeries();
  }

  inc(labels?: LabelSet<L> | number, value?: number): void {
    this.childOf(labels).inc(valueOf(labels, value));
  }
}

export interface GaugeChild {
  inc(value?: number): void;
  dec(value?: number): void;
  set(value: number): void;
}

class GaugeSeries implements GaugeChild {
  value = 0;
  inc(value = 1): void {
    this.value += value;
  }
  dec(value = 1): void {
    this.value -= value;
  }
  set(value: number): void {
    this.value = value;
  }
}

export class GaugeVec<L extends string = never> extends ScalarVec<L, GaugeSeries> {
  get type(): 'gauge' {
    return 'gauge';
  }

  protected newChild(): GaugeSeries {
    return new GaugeSeries();
  }

  inc(labels?: LabelSet<L> | number, value?: number): void {
    this.childOf(labels).inc(valueOf(labels, value));
  }

  dec(labels?: LabelSet<L> | number, value?: number): void {
    this.childOf(labels).dec(valueOf(labels, value));
  }

  set(labels: LabelSet<L> | number, value?: number): void {
    this.childOf(labels).set(valueOf(labels, value)!);
  }
}

export interface HistogramChild {
  observe(value: number): void;
}

class HistogramSeries implements HistogramChild {
  sum = 0;
  count = 0;
  /** Observations per bucket (not cumulative); the last slot is above every bound. */
  readonly counts: Float64Array;

  constructor(private readonly bounds: Float64Array) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new Error(`a histogram observes finite values, not ${value}`);
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

export interface HistogramOptions<L extends string> extends VecOptions<L> {
  buckets: readonly number[];
}

export class HistogramVec<L extends string = never> extends Vec<L, HistogramSeries> {
  private readonly bounds: Float64Array;

  constructor(o: HistogramOptions<L>) {
    super(o);
    this.bounds = Float64Array.from([...o.buckets].sort((a, b) => a - b));
  }

  get type(): 'histogram' {
    return 'histogram';
  }

  protected newChild(): HistogramSeries {
    return new HistogramSeries(this.bounds);
  }

  observe(labels: LabelSet<L> | number, value?: number): void {
    this.childOf(labels).observe(valueOf(labels, value)!);
  }

  protected values(): ExportedValue[] {
    const out: ExportedValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, child } of this.allSeries()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += child.counts[i]!;
        out.push({ labels: { le: this.bounds[i]! }, sharedLabels: labels, value: acc, metricName: bucket });
      }
      out.push({ labels: { le: '+Inf' }, sharedLabels: labels, value: child.count, metricName: bucket });
      out.push({ labels: {}, sharedLabels: labels, value: child.sum, metricName: `${this.name}_sum` });
      out.push({ labels: {}, sharedLabels: labels, value: child.count, metricName: `${this.name}_count` });
    }
    return out;
  }
}
