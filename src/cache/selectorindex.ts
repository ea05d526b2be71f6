// A selector index for a Store: for each indexed field (pods: spec.nodeName, the one kube-apiserver's watch cache
// indexes) and label key, value -> the keys of the objects carrying it, in key order. A LIST whose selector demands
// one of those values (k=v, k in (a,b), spec.nodeName=x) then walks the smallest such set instead of the whole
// store. The index only narrows where to look: the list still applies the whole selector to every candidate.
//
// Postings are chunked sorted keys (cheap inserts at a million keys, ordered iteration from a continue key); a value
// held by one object keeps its key inline, since per-pod labels (pod names, controller uids) are common and a
// SortedKeys per lone key would cost ~150 bytes. Keys are the Store's own strings, so an entry costs a pointer.

import type { FieldSelector } from '../api/fields.js';
import type { LabelSelector } from '../api/labels.js';
import { SortedKeys } from './sortedkeys.js';

/** The keys with one value. */
type Posting = string | SortedKeys;

/** value -> posting */
type Postings = Map<string, Posting>;

export interface SelectorIndexConfig {
  /** Selectable fields to index (values as the Store's fieldsOf gives them; a missing field is indexed as ""). */
  fields?: readonly string[];
  /** true: every label key; a list: only these keys; absent: no labels. */
  labels?: boolean | readonly string[];
}

export interface SelectorIndex {
  readonly fields: ReadonlyMap<string, Postings>;
  /** Label key -> postings, for the keys indexed so far. */
  readonly labels: Map<string, Postings>;
  /** Only these label keys, or every key when undefined (and labelsOn). */
  readonly labelKeys?: ReadonlySet<string>;
  readonly labelsOn: boolean;
  /**
   * built: kept on every change. deferred: not kept, and not offered (candidatesFor); a store filled from empty by
   * lists defers it, since a million keys arriving in no order cost several random inserts each, and one pass in
   * key order afterwards appends them (Store.buildIndex). building: that pass is under way; objects with keys up to
   * builtTo are kept on every change, the others are taken as the pass reaches them.
   */
  state: 'built' | 'deferred' | 'building';
  builtTo: string;
  /** Bumped whenever the index is deferred, so a build under way knows it was overtaken. */
  generation: number;
}

/** What the index needs of a stored object. */
export interface Indexed {
  readonly key: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly fields: Readonly<Record<string, string>>;
}

export function newSelectorIndex(config: SelectorIndexConfig): SelectorIndex {
  const l = config.labels;
  return {
    fields: new Map((config.fields ?? []).map((f) => [f, new Map()])),
    labels: new Map(),
    labelKeys: Array.isArray(l) ? new Set(l) : undefined,
    labelsOn: l === true || (Array.isArray(l) && l.length > 0),
    state: 'built',
    builtTo: '',
    generation: 0,
  };
}

/** Empties the index and stops keeping it until it is built again (see SelectorIndex.state). */
export function deferIndex(idx: SelectorIndex): void {
  for (const postings of idx.fields.values()) postings.clear();
  idx.labels.clear();
  idx.state = 'deferred';
  idx.builtTo = '';
  idx.generation++;
}

/** A building index takes obj, whose key follows every key it holds: obj's key is the new builtTo. */
export function buildIndexWith(idx: SelectorIndex, obj: Indexed): void {
  apply(idx, undefined, obj);
  idx.builtTo = obj.key;
}

/**
 * Moves an object's key from prev's values to next's: prev undefined for an add, next undefined for a delete.
 * Values that did not change (a status update's labels and node) are not touched.
 */
export function updateIndex(idx: SelectorIndex, prev: Indexed | undefined, next: Indexed | undefined): void {
  if (idx.state !== 'built' && (idx.state === 'deferred' || (next ?? prev)!.key > idx.builtTo)) return;
  apply(idx, prev, next);
}

function apply(idx: SelectorIndex, prev: Indexed | undefined, next: Indexed | undefined): void {
  for (const [field, postings] of idx.fields) {
    const was = prev ? (prev.fields[field] ?? '') : undefined;
    const now = next ? (next.fields[field] ?? '') : undefined;
    if (was === now) continue;
    if (was !== undefined) removeKey(postings, was, prev!.key);
    if (now !== undefined) addKey(postings, now, next!.key);
  }
  if (!idx.labelsOn) return;
  const pl = prev?.labels;
  const nl = next?.labels;
  if (pl === nl) return;
  if (pl) {
    for (const k of Object.keys(pl)) {
      if (idx.labelKeys && !idx.labelKeys.has(k)) continue;
      const v = pl[k]!;
      if (nl && Object.hasOwn(nl, k) && nl[k] === v) continue;
      const postings = idx.labels.get(k);
      if (!postings) continue;
      removeKey(postings, v, prev!.key);
      if (postings.size === 0) idx.labels.delete(k);
    }
  }
  if (nl) {
    for (const k of Object.keys(nl)) {
      if (idx.labelKeys && !idx.labelKeys.has(k)) continue;
      const v = nl[k]!;
      if (pl && Object.hasOwn(pl, k) && pl[k] === v) continue;
      let postings = idx.labels.get(k);
      if (!postings) idx.labels.set(k, (postings = new Map()));
      addKey(postings, v, next!.key);
    }
  }
}

function addKey(postings: Postings, value: string, key: string): void {
  const p = postings.get(value);
  if (p === undefined) postings.set(value, key);
  else if (typeof p !== 'string') p.add(key);
  else if (p !== key) {
    const s = new SortedKeys();
    s.add(p);
    s.add(key);
    postings.set(value, s);
  }
}

function removeKey(postings: Postings, value: string, key: string): void {
  const p = postings.get(value);
  if (p === undefined) return;
  if (typeof p === 'string') {
    if (p === key) postings.delete(value);
    return;
  }
  p.delete(key);
  // Back to inline at one key: a list still walking the old SortedKeys sees it as it was, which only matters for
  // objects changed after the list's resourceVersion (and the list re-checks every object it yields).
  if (p.size === 0) postings.delete(value);
  else if (p.size === 1) postings.set(value, p.from().next().value as string);
}

function postingSize(p: Posting | undefined): number {
  return p === undefined ? 0 : typeof p === 'string' ? 1 : p.size;
}

function* postingFrom(p: Posting, from: string): IterableIterator<string> {
  if (typeof p === 'string') {
    if (p >= from) yield p;
  } else {
    yield* p.from(from);
  }
}

/** A superset of a selector's matches, as keys in order. */
export interface Candidates {
  /** How many keys (over all namespaces). */
  readonly size: number;
  /** The candidate keys >= from, in key order; safe across changes while suspended, like SortedKeys.from. */
  from(from: string): IterableIterator<string>;
  /** Which index: "label app" or "field spec.nodeName", for tests and reports. */
  readonly via: string;
}

/**
 * The smallest candidate set the index offers for the selectors: one per requirement that demands values of an
 * indexed field or label (=, ==, in), the union of those values' postings. Undefined when none does.
 */
export function candidatesFor(idx: SelectorIndex, ls: LabelSelector, fs: FieldSelector): Candidates | undefined {
  if (idx.state !== 'built') return undefined;
  let best: { postings: Posting[]; size: number; via: string } | undefined;
  const consider = (byValue: Postings | undefined, values: readonly string[], via: string) => {
    const postings: Posting[] = [];
    let size = 0;
    for (const v of new Set(values)) {
      const p = byValue?.get(v);
      if (p === undefined) continue;
      postings.push(p);
      size += postingSize(p);
    }
    if (!best || size < best.size) best = { postings, size, via };
  };
  for (const r of fs.requirements) {
    if (r.operator === '!=') continue;
    const byValue = idx.fields.get(r.field);
    if (byValue) consider(byValue, [r.value], `field ${r.field}`);
  }
  if (idx.labelsOn) {
    for (const r of ls.requirements) {
      if (r.operator !== '=' && r.operator !== '==' && r.operator !== 'in') continue;
      if (idx.labelKeys && !idx.labelKeys.has(r.key)) continue;
      // A key no object carries has no postings: nothing matches.
      consider(idx.labels.get(r.key), r.values, `label ${r.key}`);
    }
  }
  if (!best) return undefined;
  const { postings, size, via } = best;
  return { size, via, from: (from) => mergeFrom(postings, from) };
}

/** The union of postings (disjoint: one value per object) in key order. */
function* mergeFrom(postings: readonly Posting[], from: string): IterableIterator<string> {
  if (postings.length === 0) return;
  if (postings.length === 1) return yield* postingFrom(postings[0]!, from);
  const its = postings.map((p) => postingFrom(p, from));
  const heads = its.map((it) => it.next());
  for (;;) {
    let min = -1;
    for (let i = 0; i < heads.length; i++) {
      const h = heads[i]!;
      if (!h.done && (min < 0 || h.value < (heads[min]!.value as string))) min = i;
    }
    if (min < 0) return;
    yield heads[min]!.value as string;
    heads[min] = its[min]!.next();
  }
}
