// The byte-level list intake (encodeListBytes, src/cache/intake.ts, over the scanner in src/api/jsonbytes.ts)
// against the parse-everything path (encodeList): for any member page, the same throw or the same page. Pages are
// compared by value (canon below): the new path may keep the member's key order, whitespace and number spelling,
// which a client decoding the JSON cannot tell apart.

import { beforeAll, describe, expect, it } from 'vitest';
import { withBothScans } from '../support/scanmodes.js';
import { isJSON, skipValue } from '../../src/api/jsonbytes.js';
import { CLUSTER_LABEL, encodeList, encodeListBytes, intakePaths, releasePage, servedJSON, type EncodedPage, type IntakeTransform } from '../../src/cache/intake.js';
import { AWKWARD_PAGES, MANAGED_FIELDS, R, canon, listText, pagesOf, podList, podText, randomEvent, randomPod, randomString, realPod, spell, type Spelling } from '../support/podcases.js';
import { prng } from '../support/prng.js';
import { mutated } from '../support/mutate.js';

type Unchanged = (namespace: string, name: string, memberRV: string) => boolean;

const PODS: IntakeTransform = { cluster: 'member-ä', resource: 'pods', dropManagedFields: true };
const PODS_KEEP: IntakeTransform = { ...PODS, dropManagedFields: false };
const EVENTS: IntakeTransform = { cluster: 'm-1', resource: 'events', dropManagedFields: true };

// ---- comparing by value ----

type Outcome = { ok: true; page: EncodedPage; error?: undefined } | { ok: false; page?: undefined; error: unknown };

function outcome(f: () => EncodedPage): Outcome {
  try {
    return { ok: true, page: f() };
  } catch (error) {
    return { ok: false, error };
  }
}

function preview(b: Uint8Array): string {
  const s = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
  return JSON.stringify(s.length > 400 ? `${s.slice(0, 300)}...${s.slice(-100)}` : s);
}

const PAGE_PARTS = ['listRV', 'continue', 'namespaces', 'names', 'memberRVs', 'labels', 'fields', 'v1Fields'] as const;

/**
 * The keys a JSON text repeats within one object (JSON.parse keeps the last, so equal parsed values do not show
 * them), as "path.key".
 */
function repeatedKeys(text: string): string[] {
  const out: string[] = [];
  // Per open container: null for an array, else the object's keys so far and its key (for the path).
  const open: ({ keys: Set<string>; key: string } | null)[] = [];
  let expectKey = false;
  let key = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (expectKey) {
        key = JSON.parse(text.slice(i, j + 1)) as string;
        const top = open[open.length - 1]!;
        if (top.keys.has(key)) out.push([...open.map((o) => o?.key ?? '[]'), key].join('.'));
        top.keys.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === '{') {
      open.push({ keys: new Set(), key });
      expectKey = true;
    } else if (c === '[') {
      open.push(null);
    } else if (c === '}' || c === ']') {
      open.pop();
    } else if (c === ',') {
      expectKey = open[open.length - 1] !== null;
    }
  }
  return out;
}

/** Throws (with what differs) unless the two pages serve the same objects. */
function assertSamePage(neu: EncodedPage, old: EncodedPage, what: () => string, rvs: string[], checkRepeats: boolean): void {
  if (neu.count !== old.count) throw new Error(`${what()}: count ${neu.count}, old path ${old.count}`);
  if (neu.stride !== old.stride) throw new Error(`${what()}: stride ${neu.stride}, old path ${old.stride}`);
  for (const part of PAGE_PARTS) {
    const [a, b] = [canon(neu[part]), canon(old[part])];
    if (a !== b) throw new Error(`${what()}: ${part}\n  new: ${a}\n  old: ${b}`);
  }
  for (let i = 0; i < old.count; i++) {
    for (const view of old.stride === 8 ? ([0, 1] as const) : ([0] as const)) {
      for (const rv of rvs) {
        const [a, b] = [servedJSON(neu, i, view, rv).toString('utf8'), servedJSON(old, i, view, rv).toString('utf8')];
        // The same bytes (JSON.stringify's: no repeated keys) are the same value.
        if (a === b) continue;
        let pa: unknown;
        try {
          pa = JSON.parse(a);
        } catch (e) {
          throw new Error(`${what()}: object ${i} view ${view} rv ${rv}: served JSON does not parse (${String(e)}): ${JSON.stringify(a.slice(0, 400))}`);
        }
        const [ca, cb] = [canon(pa), canon(JSON.parse(b))];
        if (ca !== cb) throw new Error(`${what()}: object ${i} view ${view} rv ${rv}\n  new: ${ca}\n  old: ${cb}`);
        if (checkRepeats && rv === rvs[0]) {
          const repeated = repeatedKeys(a);
          if (repeated.length > 0) throw new Error(`${what()}: object ${i} view ${view}: served JSON repeats ${repeated.join(', ')}: ${JSON.stringify(a.slice(0, 400))}`);
        }
      }
    }
  }
}

interface SameOptions {
  unchanged?: Unchanged;
  sizeHint?: number;
  rvs?: string[];
  what?: string;
  /** Also on the bytes as a view into a larger buffer with junk around them, which must not be read. */
  padded?: boolean;
}

/**
 * Runs both paths on bytes; throws unless they agree (both throw, or equal pages). Returns the old outcome and how
 * many of the new path's runs took the byte path (intakePaths) rather than falling back to the object path.
 */
function same(bytes: Buffer, t: IntakeTransform, o: SameOptions = {}) {
  const what = () => `${o.what ?? 'page'} (${t.resource}, dropManagedFields ${t.dropManagedFields}${o.unchanged ? ', unchanged' : ''}) ${preview(bytes)}`;
  const old = outcome(() => encodeList(bytes.toString('utf8'), t, 0, o.unchanged));
  const inputs = [bytes];
  if (o.padded ?? true) {
    const junk = Buffer.from(']}"\\,x\xff', 'latin1');
    inputs.push(Buffer.concat([junk, bytes, junk]).subarray(junk.length, junk.length + bytes.length));
  }
  let viaBytes = 0;
  // A member page without repeated keys gets served JSON without them (a parser other than JSON.parse may reject
  // them or keep the first).
  let checkRepeats: boolean | undefined;
  for (const input of inputs) {
    const before = intakePaths.bytes;
    const scannedBefore = intakePaths.scanned;
    const neu = outcome(() => encodeListBytes(input, t, o.sizeHint ?? 0, o.unchanged));
    viaBytes += intakePaths.bytes - before;
    // Every pod page the byte path takes went through the scan when it is on, and none when it is off.
    if (t.resource === 'pods' && intakePaths.bytes > before) expect(intakePaths.scanned - scannedBefore, what()).toBe(scanning() ? 1 : 0);
    if (!old.ok) {
      if (neu.ok) throw new Error(`${what()}: the old path throws (${String(old.error)}), the new path gives a page of ${neu.page.count}`);
      continue;
    }
    if (!neu.ok) throw new Error(`${what()}: the new path throws (${String(neu.error)}), the old path gives a page of ${old.page.count}`);
    checkRepeats ??= repeatedKeys(bytes.toString('utf8')).length === 0;
    assertSamePage(neu.page, old.page, what, o.rvs ?? ['42'], checkRepeats);
  }
  return { ...old, runs: inputs.length, viaBytes };
}

/**
 * same() over pods with and without dropManagedFields; expects a page (not a throw) unless told otherwise, and when
 * told, that the new path took the byte path.
 */
function samePods(text: string | Buffer, o: { throws?: boolean; either?: boolean; unchanged?: Unchanged; what?: string; viaBytes?: boolean; padded?: boolean } = {}): EncodedPage[] {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const pages: EncodedPage[] = [];
  for (const t of [PODS, PODS_KEEP]) {
    const r = same(bytes, t, { ...o, rvs: ['42', '1099511627776'] });
    if (o.either) continue;
    if (!o.throws) {
      if (!r.ok) throw new Error(`${o.what ?? 'page'}: the old path throws (${String(r.error)}); the case means to give a page: ${preview(bytes)}`);
      pages.push(r.page);
      if (o.viaBytes && r.viaBytes !== r.runs) throw new Error(`${o.what ?? 'page'}: the new path left the page to the object path: ${preview(bytes)}`);
    } else if (r.ok) {
      throw new Error(`${o.what ?? 'page'}: the old path gives a page; the case means to throw: ${preview(bytes)}`);
    }
  }
  return pages;
}

// ---- pages ----

// Every case runs with the WebAssembly scan and with the byte scanner alone (test/support/scanmodes.ts).
let scanning = () => false;
withBothScans((mode) => {
beforeAll(() => {
  scanning = mode;
});

describe('encodeListBytes on realistic pods', () => {
  it('equals encodeList for generated pods, with and without managedFields', () => {
    const plain = [realPod(1), realPod(2, 'Pending'), realPod(3, 'Failed'), realPod(4, 'Succeeded')];
    const managed = plain.map((p) => ({ ...p, metadata: { ...p.metadata, managedFields: MANAGED_FIELDS } }));
    const [dropped, kept] = samePods(podList(managed), { viaBytes: true });
    expect(dropped!.count).toBe(4);
    expect(dropped!.names[0]).toBe(plain[0]!.metadata.name);
    expect(JSON.parse(servedJSON(dropped!, 0, 0, '5').toString()).metadata.managedFields).toBeUndefined();
    expect(JSON.parse(servedJSON(kept!, 0, 0, '5').toString()).metadata.managedFields).toEqual(MANAGED_FIELDS);
    samePods(podList(plain), { viaBytes: true });
    // And as the new path gives them: the cluster label, the resourceVersion, the pod's own fields.
    const page = encodeListBytes(Buffer.from(podList(managed)), PODS);
    const served = JSON.parse(servedJSON(page, 1, 0, '987').toString());
    expect(served.metadata.resourceVersion).toBe('987');
    expect(served.metadata.labels[CLUSTER_LABEL]).toBe(PODS.cluster);
    expect(served.metadata.managedFields).toBeUndefined();
    expect(served.status).toEqual(plain[1]!.status);
    expect(page.memberRVs).toEqual(['1001', '1002', '1003', '1004']);
    expect(page.listRV).toBe('1234');
    expect(page.fields[0]!['spec.nodeName']).toBe('node-1');
    expect(page.fields[0]!['status.podIP']).toBe('10.0.0.1');
  });

  it("reads shared fields right whatever the values read before them (the intake's recent values)", () => {
    // Each of these fields is read by comparing its bytes with the last few values read: values of one length,
    // more values than are kept, an escaped spelling of a value kept, empty strings and values that are not strings.
    const values = ['Always', 'Alwayz', 'OnFailure', 'Never', 'ESCAPED', 'Always', '', 'a', 'b', 'c', 'd', 'e', 'Always'];
    const pods = values.map((v, i) => {
      const p = realPod(40 + i);
      p.metadata.namespace = i % 2 ? `ns-${v}` : v;
      const spec = p.spec as Record<string, unknown>;
      spec.restartPolicy = v;
      spec.schedulerName = `${v}-scheduler`;
      spec.serviceAccountName = i === 3 ? 5 : v;
      (p.status as Record<string, unknown>).phase = i === 4 ? null : v;
      return p;
    });
    // JSON.stringify spells every value plainly: the escape is written in afterwards.
    const text = podList(pods).replaceAll('ESCAPED', 'Alw\\u0061ys');
    expect(text).toContain('"restartPolicy":"Alw\\u0061ys"');
    const [page] = samePods(text, { viaBytes: true });
    const read = values.map((v) => (v === 'ESCAPED' ? 'Always' : v));
    expect(page!.fields.map((f) => f['spec.restartPolicy'])).toEqual(read);
    expect(page!.fields.map((f) => f['spec.schedulerName'])).toEqual(read.map((v) => `${v}-scheduler`));
    expect(page!.fields.map((f) => f['status.phase'])).toEqual(read.map((v, i) => (i === 4 ? '' : v)));
    expect(page!.fields.map((f) => f['spec.serviceAccountName'])).toEqual(read.map((v, i) => (i === 3 ? '' : v)));
    expect(page!.namespaces).toEqual(read.map((v, i) => (i % 2 ? `ns-${v}` : v)));
  });

  it('equals encodeList for labels absent, {} and several, namespace and resourceVersion absent', () => {
    const pods = [0, 1, 2, 3, 4].map((i) => realPod(10 + i));
    delete pods[0]!.metadata.labels;
    pods[1]!.metadata.labels = {};
    pods[2]!.metadata.labels = { a: '1', 'b.example.com/c': 'd', e: '' };
    delete pods[3]!.metadata.namespace;
    delete pods[4]!.metadata.resourceVersion;
    const [page] = samePods(podList(pods), { viaBytes: true });
    expect(page!.labels[0]).toEqual({ [CLUSTER_LABEL]: PODS.cluster });
    expect(page!.labels[1]).toEqual({ [CLUSTER_LABEL]: PODS.cluster });
    expect(page!.namespaces[3]).toBe('');
    expect(page!.memberRVs[4]).toBe('');
  });

  it("gives pods of one cluster with the same labels' bytes one frozen labels object, and no other cluster's", () => {
    const pods = [0, 1, 2, 3].map((i) => realPod(20 + i));
    for (const p of pods) p.metadata.labels = { app: 'shared-app-name', tier: 'web' };
    pods[3]!.metadata.labels = { app: 'shared-app-name', tier: 'db' };
    const text = Buffer.from(podList(pods));
    const page = encodeListBytes(text, PODS);
    const again = encodeListBytes(text, PODS);
    const other = encodeListBytes(text, { ...PODS, cluster: 'member-2' });
    expect(page.labels[1]).toBe(page.labels[0]);
    expect(again.labels[2]).toBe(page.labels[0]);
    expect(page.labels[3]).not.toBe(page.labels[0]);
    expect(page.labels[3]).toEqual({ [CLUSTER_LABEL]: PODS.cluster, app: 'shared-app-name', tier: 'db' });
    expect(other.labels[0]).not.toBe(page.labels[0]);
    expect(other.labels[0]).toEqual({ [CLUSTER_LABEL]: 'member-2', app: 'shared-app-name', tier: 'web' });
    // Shared, so no holder may change it.
    expect(Object.isFrozen(page.labels[0])).toBe(true);
    expect(() => {
      page.labels[0]!.tier = 'db';
    }).toThrow(TypeError);
  });

  it('equals encodeList with kind and apiVersion on the items or only on the list', () => {
    const withKinds = [realPod(20), realPod(21)];
    const without = withKinds.map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
    const mixed = [withKinds[0], without[1]];
    for (const items of [withKinds, without, mixed]) {
      samePods(podList(items), { viaBytes: true });
      samePods(podList(items, { kind: 'PodList', metadata: { resourceVersion: '1' } }), { viaBytes: true });
      samePods(podList(items, { apiVersion: 'v1', metadata: { resourceVersion: '1' } }), { viaBytes: true });
      samePods(podList(items, { metadata: { resourceVersion: '1' } }), { viaBytes: true });
      samePods(podList(items, { kind: 'List', apiVersion: 'v1' }), { viaBytes: true });
      // Items before the list's kind and apiVersion.
      samePods(JSON.stringify({ items, metadata: { resourceVersion: '2' }, apiVersion: 'v1', kind: 'PodList' }), { viaBytes: true });
    }
    const page = encodeListBytes(Buffer.from(podList(without)), PODS);
    const served = JSON.parse(servedJSON(page, 1, 0, '3').toString());
    expect([served.kind, served.apiVersion]).toEqual(['Pod', 'v1']);
  });

  it('serves each key once when the items carry their own kind and apiVersion', () => {
    const text = '{"kind":"PodList","apiVersion":"v1","items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}]}';
    const page = encodeListBytes(Buffer.from(text), PODS);
    expect(repeatedKeys(servedJSON(page, 0, 0, '1').toString())).toEqual([]);
  });

  it('equals encodeList for continue, remainingItemCount, empty, absent and null items', () => {
    const pods = [realPod(30), realPod(31)];
    const [page] = samePods(podList(pods, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '55', continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==', remainingItemCount: 12 } }), { viaBytes: true });
    expect([page!.listRV, page!.continue]).toEqual(['55', 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==']);
    for (const text of [
      podList([]),
      '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"}}',
      '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":null}',
      '{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}',
      '{}',
      '{"items":[]}',
    ]) {
      const [empty] = samePods(text);
      expect(empty!.count).toBe(0);
    }
  });

  it('equals encodeList for events, with their events.k8s.io/v1 view', () => {
    const ev = (name: string, extra: Record<string, unknown> = {}) => ({
      metadata: { name, namespace: 'default', resourceVersion: '7', labels: { 'app.kubernetes.io/名前': 'ünïcödé 🚀' }, managedFields: MANAGED_FIELDS },
      involvedObject: { kind: 'Pod', namespace: 'default', name: 'p', uid: 'u', apiVersion: 'v1', fieldPath: 'spec.containers{app}' },
      reason: 'Scheduled',
      message: 'Successfully assigned default/p to node-1 ✓ "quoted"\n',
      source: { component: 'default-scheduler' },
      firstTimestamp: '2026-01-01T00:00:00Z',
      lastTimestamp: '2026-01-01T00:00:00Z',
      count: 1,
      type: 'Normal',
      ...extra,
    });
    const text = JSON.stringify({ kind: 'EventList', apiVersion: 'v1', metadata: { resourceVersion: '8' }, items: [ev('e1'), ev('e2', { reportingComponent: 'kubelet', series: { count: 3, lastObservedTime: '2026-01-01T00:00:00.000000Z' }, source: {} }), ev('e3', { message: '' })] });
    for (const t of [EVENTS, { ...EVENTS, dropManagedFields: false }]) {
      const old = same(Buffer.from(text), t, { rvs: ['42', '7'] });
      expect(old.ok).toBe(true);
    }
    const page = encodeListBytes(Buffer.from(text), EVENTS);
    expect(page.stride).toBe(8);
    const v1 = JSON.parse(servedJSON(page, 0, 1, '3').toString());
    expect([v1.apiVersion, v1.note, v1.metadata.resourceVersion]).toEqual(['events.k8s.io/v1', 'Successfully assigned default/p to node-1 ✓ "quoted"\n', '3']);
  });

  it('equals encodeList for what the caller holds already (unchanged)', () => {
    const pods = [0, 1, 2, 3].map((i) => realPod(40 + i));
    const held = new Set([`${pods[1]!.metadata.namespace}/${pods[1]!.metadata.name}@${pods[1]!.metadata.resourceVersion}`, `${pods[3]!.metadata.namespace}/${pods[3]!.metadata.name}@${pods[3]!.metadata.resourceVersion}`]);
    const unchanged: Unchanged = (ns, name, rv) => held.has(`${ns}/${name}@${rv}`);
    const [page] = samePods(podList(pods), { unchanged, viaBytes: true });
    expect(page!.count).toBe(4);
    const neu = encodeListBytes(Buffer.from(podList(pods)), PODS, 0, unchanged);
    expect(neu.offsets[4]).toBe(neu.offsets[7]);
    expect(neu.offsets[0]).toBeLessThan(neu.offsets[3]);
    samePods(podList(pods), { unchanged: () => true, viaBytes: true });
  });

  it('equals encodeList for many small pods (the page outgrows its first buffer)', () => {
    const pods = Array.from({ length: 400 }, (_, i) => ({ metadata: { name: `p${i}`, ...(i % 2 ? { namespace: 'n' } : {}) } }));
    const cluster = 'a-member-with-a-long-name-'.repeat(4);
    const r = same(Buffer.from(podList(pods)), { ...PODS, cluster }, { sizeHint: 0, padded: false });
    expect(r.page!.count).toBe(400);
    expect(r.viaBytes).toBe(1);
  });

  it("equals encodeList when a released page's buffer serves the next page", () => {
    const a = encodeListBytes(Buffer.from(podList([realPod(80), realPod(81)])), PODS);
    const servedA = servedJSON(a, 1, 0, '5');
    releasePage(a);
    const text = podList([realPod(82), realPod(83), realPod(84)]);
    const r = same(Buffer.from(text), PODS, { padded: false });
    expect(r.viaBytes).toBe(1);
    releasePage(encodeListBytes(Buffer.from(podList([realPod(85)])), PODS));
    const small = podList([{ metadata: { name: 'x' } }]);
    expect(same(Buffer.from(small), PODS, { padded: false }).page!.count).toBe(1);
    expect(JSON.parse(servedA.toString()).metadata.name).toBe(realPod(81).metadata.name);
  });

  it('equals encodeList whatever the size hint', () => {
    const text = Buffer.from(podList([0, 1, 2, 3, 4, 5].map((i) => realPod(50 + i))));
    for (const sizeHint of [0, 1, 100, text.length, text.length * 3]) {
      expect(same(text, PODS, { sizeHint }).ok).toBe(true);
    }
  });
});

// ---- awkward but valid JSON ----

describe('encodeListBytes on awkward but valid JSON', () => {
  const cases = AWKWARD_PAGES;
  for (const [name, text] of cases) {
    it(`equals encodeList: ${name}`, () => {
      for (const page of pagesOf(text)) {
        JSON.parse(page); // the case is valid JSON
        const [encoded] = samePods(page, { what: name });
        if (name === 'member cluster label' || name === 'escaped cluster label key' || name === 'duplicate label keys') {
          for (let i = 0; i < encoded!.count; i++) expect(JSON.parse(servedJSON(encoded!, i, 0, '1').toString()).metadata.labels[CLUSTER_LABEL]).toBe(PODS.cluster);
        }
        // And with everything held already: the names still come.
        samePods(page, { what: name, unchanged: () => true });
      }
    });
  }

  it('equals encodeList for awkward events', () => {
    for (const [, text] of cases.slice(0, 20)) {
      const events = text.replace('"PodList"', '"EventList"');
      same(Buffer.from(events), EVENTS);
    }
  });

  // Pages of JSON that is no list of objects (items not objects, labels that cannot take the cluster label, a kind
  // that is not a string): the old path may throw or not; the new path does the same.
  const odd: [string, string][] = [
    ['items a string, no list kind', `{"items":"ab"}`],
    ['null among items under a list kind', `{"kind":"PodList","items":[{"metadata":{"name":"p"}},null]}`],
    ['a number among items under an apiVersion', `{"apiVersion":"v1","items":[{"metadata":{"name":"p"}},5]}`],
    ['a string among items under a list kind', `{"kind":"PodList","items":["x"]}`],
    ['labels a string', listText([podText(`"name":"p","labels":"x"`)])],
    ['labels a number', listText([podText(`"name":"p","labels":5`)])],
    ['labels true', listText([podText(`"name":"p","labels":true`)])],
    ['list kind not a string', `{"kind":5,"items":[{"metadata":{"name":"p"}}]}`],
    ['items an object', `{"kind":"PodList","items":{"metadata":{"name":"p"}}}`],
    ['items a number', `{"items":5}`],
    ['a page that is null', `null`],
  ];
  for (const [name, text] of odd) {
    it(`throws or not as encodeList does: ${name}`, () => {
      samePods(text, { what: name, either: true });
      samePods(text, { what: name, either: true, unchanged: () => true });
    });
  }
});

// ---- invalid JSON ----

describe('encodeListBytes and the scanner on invalid JSON', () => {
  const small = listText([podText(`"name":"pöd","namespace":"ns","labels":{"a":"b\\n"},"resourceVersion":"12","managedFields":[{"m":1.5e3}]`), `{"metadata":{"name":"q"},"spec":{"x":[true,false,null,-0.5]}}`]);

  it('throws for the page cut at every byte', () => {
    // Every byte of a small page, every few of a realistic one.
    for (const [text, step] of [[small, 1], [podList([realPod(70)]), 7]] as const) {
      const full = Buffer.from(text);
      for (let k = 0; k < full.length; k += step) {
        // A view of the page's start: the rest is there in memory, and must not be read.
        const cut = full.subarray(0, k);
        expect(same(cut, PODS, { padded: false, what: `cut at ${k}` }).ok).toBe(false);
        expect(isJSON(cut)).toBe(false);
        if (k > 0) expect(() => skipValue(cut, 0)).toThrow(SyntaxError);
      }
      expect(isJSON(full)).toBe(true);
      expect(skipValue(full, 0)).toBe(full.length);
    }
  });

  const badTokens = [
    '01', '-01', '00', '-', '1.', '.5', '+1', '1e', '1e+', '1E-', '0x10', '1_0', '- 1', '1.e5', '--1', 'Infinity', '-Infinity', 'NaN',
    R`"\x"`, R`"\u12"`, R`"\u12G4"`, R`"\u12g4"`, R`"\u00ZZ"`, R`"\u"`, R`"\uD800\u"`, R`"\U0041"`, R`"\'"`, R`"\a"`, R`"\0"`, '"\\',
    '"a\u0001b"', '"a\tb"', '"a\nb"', '"a\u001fb"', '"a\rb"', `'x'`, '"abc',
    'tru', 'nul', 'fals', 'True', 'NULL', 'undefined', 'truex', 'nulll',
    '[1,]', '[,1]', '[1 2]', '[1,,2]', '[', ']', '{"a":1,}', '{,}', '{"a" 1}', '{"a":}', '{"a"}', '{a:1}', `{'a':1}`, '{"a":1 "b":2}', '{"a"::1}', '{1:2}', '{null:1}', '[1]]', '{}}',
  ];
  // The bad token in an item's metadata, deep in its spec, in the list metadata, and as a label value.
  const places = [
    (x: string) => listText([podText(`"name":"p","x":${x}`)]),
    (x: string) => listText([podText(`"name":"p"`), podText(`"name":"q"`, `"spec":{"containers":[{"args":["a",${x}]}]}`)]),
    (x: string) => listText([podText(`"name":"p"`)], `"kind":"PodList","metadata":{"resourceVersion":"1","x":${x}}`),
    (x: string) => listText([podText(`"name":"p","labels":{"a":${x}}`)]),
    (x: string) => `{"kind":"PodList","items":[${podText(`"name":"p"`)}],"x":${x}}`,
  ];

  it('throws for bad tokens wherever they are, held or not', () => {
    for (const x of badTokens) {
      for (const place of places) {
        const text = place(x);
        expect(() => JSON.parse(text), text).toThrow();
        samePods(text, { throws: true, what: `bad token ${JSON.stringify(x)}`, padded: false });
        samePods(text, { throws: true, what: `bad token ${JSON.stringify(x)}, all held`, unchanged: () => true, padded: false });
        expect(isJSON(Buffer.from(text)), text).toBe(false);
      }
      const b = Buffer.from(x);
      expect(isJSON(b), x).toBe(false);
      // skipValue may stop before the bad part (01: at 1) or throw there, with a SyntaxError.
      let end: number | undefined;
      try {
        end = skipValue(b, 0);
      } catch (e) {
        expect(e, x).toBeInstanceOf(SyntaxError);
      }
      if (end !== undefined) expect(end, x).toBeLessThan(b.length);
    }
  });

  it('throws for trailing garbage, stray whitespace and a byte order mark', () => {
    const ok = listText([podText(`"name":"p"`)]);
    const bad = [
      `${ok}x`, `${ok} {}`, `${ok}}`, `${ok},`, `${ok}]`, `${ok}\u0000`, `${ok} 1`, `${ok}""`, `[${ok}`, `${ok}${ok}`,
      `\ufeff${ok}`, `${ok}\f`, `\u000b${ok}`, `\u00a0${ok}`, ok.replace('"items":', '"items":\u00a0'), ok.replace('"items":', '"items":\f'), ok.replace(',', '\u2028,'),
      '', ' ', '\r\n',
    ];
    for (const text of bad) {
      expect(() => JSON.parse(text), JSON.stringify(text)).toThrow();
      samePods(text, { throws: true });
      expect(isJSON(Buffer.from(text)), JSON.stringify(text)).toBe(false);
    }
  });

  it('keeps objects and arrays apart at any depth, and after a failed check', () => {
    // The open containers are kept on a stack skipValue reuses (grown past 64): a closer must match its own opener
    // at every depth, and a check that failed half-way must not leave its containers to the next one.
    for (const depth of [3, 63, 64, 65, 500]) {
      const open = '[{"a":'.repeat(depth);
      const close = '}]'.repeat(depth);
      expect(isJSON(Buffer.from(open + 'true' + close))).toBe(true);
      expect(isJSON(Buffer.from(open + 'true' + ']}' + close.slice(2)))).toBe(false);
      expect(isJSON(Buffer.from(open + 'true' + close.slice(0, -1) + '}'))).toBe(false);
      expect(isJSON(Buffer.from(open))).toBe(false);
      expect(isJSON(Buffer.from('{"a":[1,2]}'))).toBe(true);
      expect(isJSON(Buffer.from(' [ { "a" : [ 1 , 2 ] } , { } , [ ] ] '))).toBe(true);
    }
  });

  it('does not overflow the stack on deep nesting', () => {
    for (const depth of [10_000, 100_000]) {
      const deep = '['.repeat(depth) + ']'.repeat(depth);
      const b = Buffer.from(deep);
      expect(isJSON(b)).toBe(true);
      expect(skipValue(b, 0)).toBe(b.length);
      expect(isJSON(Buffer.from(deep + ']'))).toBe(false);
      expect(isJSON(Buffer.from('['.repeat(depth) + ']'.repeat(depth - 1)))).toBe(false);
      const objs = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      expect(isJSON(Buffer.from(objs))).toBe(true);
      // In a pod: JSON.parse takes it; the old path's JSON.stringify then throws a RangeError. The new path may
      // serve it (kept bytes) or refuse it, but not with a stack overflow.
      const text = listText([podText(`"name":"p"`, `"spec":{"x":${deep}}`)]);
      expect(() => encodeList(text, PODS)).toThrow(RangeError);
      let page: EncodedPage | undefined;
      try {
        page = encodeListBytes(Buffer.from(text), PODS);
      } catch (e) {
        expect(e).not.toBeInstanceOf(RangeError);
      }
      if (page) {
        expect(page.count).toBe(1);
        const served = servedJSON(page, 0, 0, '1').toString();
        expect(served).toContain(deep);
        let v = JSON.parse(served).spec.x;
        let d = 0;
        while (Array.isArray(v)) [v, d] = [v[0], d + 1];
        expect(d).toBe(depth);
      }
    }
  });
});

// ---- invalid UTF-8 ----

describe('encodeListBytes on invalid UTF-8', () => {
  /** s with the bytes at each @. */
  const withBytes = (s: string, bad: number[]) => Buffer.concat(s.split('@').flatMap((part, i) => (i === 0 ? [Buffer.from(part)] : [Buffer.from(bad), Buffer.from(part)])));
  const pages = [
    [0xff], [0xfe], [0xc0, 0x80], [0xc3], [0xe6, 0x97], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xf0, 0x9f, 0x98], [0xc3, 0x28],
  ].flatMap((bad) => [
    withBytes(listText([podText(`"name":"p@q","labels":{"a":"b"}`)]), bad),
    withBytes(listText([podText(`"name":"p","labels":{"a":"x@y","k@":"v"}`)]), bad),
    withBytes(listText([podText(`"name":"p","annotations":{"a":"@"}`, `"spec":{"nodeName":"n@"}`)]), bad),
    withBytes(listText([podText(`"name":"p"`)], `"kind":"PodList","metadata":{"resourceVersion":"1","continue":"c@"}`), bad),
  ]);

  it('gives what the old path gives (it decodes with replacement characters)', () => {
    for (const b of pages) samePods(b);
  });

  it('throws for invalid UTF-8 outside strings', () => {
    for (const bad of [[0xff], [0xc3, 0xa9], [0x80]]) {
      samePods(withBytes(listText([podText(`"name":"p","x":1@`)]), bad), { throws: true });
      samePods(withBytes(listText([podText(`"name":"p"`)]) + ' @', bad), { throws: true });
    }
  });

  it('serves valid UTF-8, as the old path does', () => {
    const fatal = new TextDecoder('utf-8', { fatal: true });
    for (const b of pages) {
      const page = encodeListBytes(b, PODS);
      for (let i = 0; i < page.count; i++) expect(() => fatal.decode(servedJSON(page, i, 0, '1')), preview(b)).not.toThrow();
    }
  });
});

// ---- fuzz ----


const fatalUTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** JSON.parse's verdict on bytes; undefined when they are not UTF-8. */
function parses(b: Uint8Array): boolean | undefined {
  let text: string;
  try {
    text = fatalUTF8.decode(b);
  } catch {
    return undefined;
  }
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const isWS = (c: number | undefined) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

describe('isJSON and skipValue against JSON.parse (fuzz)', () => {
  it('agree on 25k mutated documents', () => {
    const seed = 20260101;
    const rnd = prng(seed);
    const docs = [
      '{"a":[1,-2.5e-3,true,false,null,"x\\u00e9\\n"]}', '[]', '{}', '0', '-0.0e+0', '"\\ud83d\\ude00"', '{"k":{"k":{"k":[[],{}]}}}', ' [1 , 2 ]\r\n',
      '"é日😀"', '[1E5,0.5,123456789012345678901234567890]', 'true', 'null', 'false', '{"":""}', '"\\/\\b\\f\\n\\r\\t\\"\\\\"', '[-1,0,10,1.25,-0.5e-10]',
      listText([podText('"name":"p","labels":{"a":"b"}')]), '{"a":{"b":[{"c":"d"},{"e":1e2}]},"f":"\\u0041"}',
    ].map((d) => Buffer.from(d));
    const units = [...'{}[]":,\\/ \t\n\r0123456789.-+eEtrufalsnxuaAfFgG', '\u0000', '\u0001', '\u001f', '\u007f', '\f', '\u000b', 'é', '😀', '\u00a0', '\ufeff', '\u2028', 'true', 'null', '\\u00', '1e', '"a":', '[]', '{}'].map((u) => Buffer.from(u));
    const units1 = [0xff, 0x80, 0xc3];
    let tested = 0;
    let skipped = 0;
    for (let n = 0; tested < 25_000; n++) {
      const b = mutated(rnd, docs[Math.floor(rnd() * docs.length)]!, () => (rnd() < 0.02 ? Buffer.from([units1[Math.floor(rnd() * units1.length)]!]) : units[Math.floor(rnd() * units.length)]!));
      const want = parses(b);
      if (want === undefined) {
        skipped++;
        continue;
      }
      tested++;
      // A view into a larger buffer: what follows it must not count.
      const view = Buffer.concat([b, Buffer.from('1]}"')]).subarray(0, b.length);
      const where = () => `seed ${seed}, case ${n}: ${JSON.stringify(b.toString('utf8'))} (JSON.parse: ${want ? 'valid' : 'invalid'})`;
      const got = isJSON(view);
      if (got !== want) throw new Error(`isJSON says ${got}, ${where()}`);
      let i = 0;
      while (isWS(b[i])) i++;
      let end: number | unknown;
      try {
        end = skipValue(view, i);
      } catch (e) {
        end = e;
      }
      if (typeof end === 'number') {
        let j = end;
        while (isWS(b[j])) j++;
        if (end <= i || end > b.length) throw new Error(`skipValue from ${i} gives ${end}, ${where()}`);
        if ((j === b.length) !== want) throw new Error(`skipValue from ${i} gives ${end}, ${where()}`);
      } else {
        if (want) throw new Error(`skipValue from ${i} throws ${String(end)}, ${where()}`);
        if (!(end instanceof SyntaxError)) throw new Error(`skipValue from ${i} throws ${String(end)}, not a SyntaxError, ${where()}`);
      }
    }
    expect(tested).toBe(25_000);
    expect(skipped).toBeLessThan(tested);
  });
});

describe('encodeListBytes against encodeList (fuzz)', () => {
  it('agree on 1200 random pages spelled every way', () => {
    const seed = 777;
    const rnd = prng(seed);
    // Compact pod pages, which the byte path takes unless an odd value sends them to the object path.
    let compact = 0;
    let compactViaBytes = 0;
    for (let n = 0; n < 1200; n++) {
      const events = rnd() < 0.1;
      const t: IntakeTransform = events ? { ...EVENTS, dropManagedFields: rnd() < 0.5 } : { ...PODS, dropManagedFields: rnd() < 0.5 };
      const items = Array.from({ length: Math.floor(rnd() * 4) }, (_, i) => (events ? randomEvent(rnd, n * 4 + i) : randomPod(rnd, n * 4 + i)));
      const list: Record<string, unknown> = {};
      if (rnd() < 0.9) list.kind = events ? 'EventList' : 'PodList';
      if (rnd() < 0.9) list.apiVersion = 'v1';
      list.metadata = { resourceVersion: String(Math.floor(rnd() * 1e9)), ...(rnd() < 0.2 ? { continue: randomString(rnd, 30), remainingItemCount: Math.floor(rnd() * 1000) } : {}) };
      list.items = rnd() < 0.03 ? null : items;
      const mode = rnd();
      const how: Spelling = { loose: mode < 0.25, inner: mode >= 0.25 && mode < 0.4 };
      const out: string[] = [];
      spell(JSON.parse(JSON.stringify(list)), rnd, out, how);
      const bytes = Buffer.from(out.join(''));
      const hold = rnd() < 0.2;
      const unchanged: Unchanged | undefined = hold ? (ns, name, rv) => (String(ns).length + String(name).length + String(rv).length) % 2 === 0 : undefined;
      try {
        const r = same(bytes, t, { unchanged, sizeHint: [0, 16, bytes.length][n % 3], padded: n % 10 === 0 });
        if (!r.ok) throw new Error(`the old path throws: ${String(r.error)}`);
        if (!events && !how.loose && !how.inner) {
          compact += r.runs;
          compactViaBytes += r.viaBytes;
        }
      } catch (e) {
        throw new Error(`seed ${seed}, case ${n}: ${(e as Error).message}`);
      }
    }
    // The byte path must be what most of them took, or this compared the object path with itself.
    expect(compactViaBytes / compact).toBeGreaterThan(0.6);
  });
});
});
