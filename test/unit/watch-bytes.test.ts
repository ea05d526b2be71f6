// Member watch events of pods read as bytes (the reflector's splitLines and watchEventOf, the sink's applyBytes,
// intake.ts encodePodBytes) against the path every event took before: the line parsed and handed to apply. For
// any line, the cache must end up holding what that path stores (the same bytes for JSON as kube-apiserver writes
// it, the same value for JSON spelled otherwise), the reflector must move to the same resourceVersion, and a line
// that is not JSON must still break the watch.

import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { withBothScans } from '../support/scanmodes.js';
import type { KubeObject } from '../../src/api/meta.js';
import { watchEventOf, watchPaths } from '../../src/cache/intake.js';
import { CLUSTER_LABEL, MergedCache } from '../../src/cache/merged.js';
import { backoff, tokenBucket } from '../../src/cache/ratelimit.js';
import { splitLines, startReflector } from '../../src/cache/reflector.js';
import { upstreamFromEndpoint } from '../../src/upstream/client.js';
import { podList, scriptedMember, watchBytes, type Step } from '../support/scriptedmember.js';
import { until } from '../support/until.js';
import { linesOf, viaBytes, viaObjects, type Delivery } from '../support/watchdelivery.js';
import { AWKWARD_PAGES, MANAGED_FIELDS, canon, listParts, randomPod, realPod, spell, type Spelling } from '../support/podcases.js';
import { prng } from '../support/prng.js';

const log = pino({ level: 'silent' });
const BASE = 7_000_000;
const CLUSTER = 'member-ä';

function newCache(dropManagedFields = true): MergedCache {
  return new MergedCache({ instanceID: 't', windowSize: 10_000, dropManagedFields, rvBase: BASE });
}

/**
 * What the cache holds and what its watchers saw, as text: per object its key, gateway version, served JSON (as
 * bytes, or by value when exact is false), labels, fields and member version; the member's last version.
 */
function contents(cache: MergedCache, seen: string[], exact: boolean): string {
  const objects = [...cache.pods.values()].map((o) => {
    const json = exact ? o.json.toString('utf8') : canon(JSON.parse(o.json.toString('utf8')));
    const memberRV = cache.owners('pods', o.namespace, o.name).find((w) => w.cluster === CLUSTER)?.memberRV;
    return JSON.stringify([o.key, o.rv, json, canon(o.labels), canon(o.fields), memberRV]);
  });
  return [...objects.sort(), `lastSeen ${cache.lastMemberRV(CLUSTER, 'pods')}`, ...seen].join('\n');
}

/** A cache, its pods sink, and the store's events as text. */
function member(dropManagedFields = true) {
  const cache = newCache(dropManagedFields);
  const sink = cache.sink(CLUSTER, 'pods');
  const seen: string[] = [];
  cache.pods.subscribe((ev) => seen.push(JSON.stringify([ev.type, ev.object.key, ev.object.rv])));
  return { cache, sink, seen };
}


/**
 * Feeds the lines to two caches, one by each path; throws unless they hold the same after every line and the
 * reflector would move to the same version. Returns the paths the byte side took.
 */
function sameAfterEach(lines: Buffer[], o: { exact: boolean; what: string; dropManagedFields?: boolean }): Delivery['via'][] {
  const neu = member(o.dropManagedFields);
  const old = member(o.dropManagedFields);
  const vias: Delivery['via'][] = [];
  for (const [i, line] of lines.entries()) {
    const what = () => `${o.what}, line ${i}: ${JSON.stringify(line.toString('utf8').slice(0, 300))}`;
    let a: Delivery | Error;
    let b: Delivery | Error;
    try {
      a = viaBytes(neu.sink, line);
    } catch (e) {
      a = e as Error;
    }
    try {
      b = viaObjects(old.sink, line);
    } catch (e) {
      b = e as Error;
    }
    if (a instanceof Error || b instanceof Error) {
      if (!(a instanceof Error && b instanceof Error)) throw new Error(`${what()}: byte path ${String(a instanceof Error ? a : a.via)}, object path ${String(b instanceof Error ? b : b.via)}`);
      vias.push('ignored');
      continue;
    }
    vias.push(a.via);
    if (a.via !== 'ignored' && canon(a.rv) !== canon(b.rv)) throw new Error(`${what()}: resourceVersion ${canon(a.rv)}, object path ${canon(b.rv)}`);
    const [x, y] = [contents(neu.cache, neu.seen, o.exact), contents(old.cache, old.seen, o.exact)];
    if (x !== y) throw new Error(`${what()} (via ${a.via}):\n  new: ${x}\n  old: ${y}`);
  }
  return vias;
}

const line = (type: string, object: unknown) => Buffer.from(JSON.stringify({ type, object }));
const rawLine = (type: string, objectText: string) => Buffer.from(`{"type":"${type}","object":${objectText}}`);

/** A pod's life as kube-apiserver's watch shows it: added, changed (twice, once repeated), deleted. */
function lifeOf(pod: KubeObject): Buffer[] {
  const rv = Number(pod.metadata.resourceVersion ?? 0);
  const changed = structuredClone(pod) as any;
  if (pod.metadata.resourceVersion !== undefined) changed.metadata.resourceVersion = String(rv + 100);
  changed.metadata.labels = { ...(changed.metadata.labels ?? {}), changed: 'yes' };
  if (changed.status) changed.status.phase = 'Succeeded';
  return [line('ADDED', pod), line('MODIFIED', changed), line('MODIFIED', changed), line('DELETED', changed), line('DELETED', changed)];
}

// The byte path's cases run with the WebAssembly scan and with the byte scanner alone (test/support/scanmodes.ts);
// splitLines, which only cuts lines, once.
withBothScans((scanning) => {
describe('pod watch events as bytes, against the object path', () => {
  it('store the same bytes for realistic pods, and take the byte path for every one', () => {
    const pods: KubeObject[] = [];
    for (let i = 0; i < 12; i++) pods.push(realPod(i, (['Running', 'Pending', 'Failed', 'Succeeded'] as const)[i % 4]));
    const odd = [0, 1, 2, 3, 4, 5].map((i) => realPod(100 + i) as any);
    odd[0].metadata.managedFields = MANAGED_FIELDS;
    delete odd[1].metadata.labels;
    odd[2].metadata.labels = {};
    delete odd[3].metadata.namespace;
    delete odd[4].metadata.resourceVersion;
    delete odd[5].kind;
    delete odd[5].apiVersion;
    pods.push(...odd);
    for (const drop of [true, false]) {
      const lines = pods.flatMap(lifeOf);
      const before = watchPaths.bytes;
      const scannedBefore = watchPaths.scanned;
      const vias = sameAfterEach(lines, { exact: true, what: `realistic (dropManagedFields ${drop})`, dropManagedFields: drop });
      expect(vias.every((v) => v === 'bytes')).toBe(true);
      expect(watchPaths.bytes - before).toBe(lines.length);
      // Each event's pod (deletions' too: read for their key and version) checked by the scan when it is on.
      expect(watchPaths.scanned - scannedBefore).toBe(scanning() ? lines.length : 0);
    }
    // And what is stored is what it should be: the cluster label, the gateway's version, no managedFields.
    const m = member();
    viaBytes(m.sink, line('ADDED', odd[0]));
    const stored = [...m.cache.pods.values()][0]!;
    const served = JSON.parse(stored.json.toString());
    expect(served.metadata.labels[CLUSTER_LABEL]).toBe(CLUSTER);
    expect(served.metadata.resourceVersion).toBe(String(stored.rv));
    expect(served.metadata.managedFields).toBeUndefined();
    expect(m.cache.lastMemberRV(CLUSTER, 'pods')).toBe(odd[0].metadata.resourceVersion);
  });

  it('store the same for awkward pods, in frames as kube-apiserver writes them and otherwise', () => {
    let viaBytesCount = 0;
    for (const [name, text] of AWKWARD_PAGES) {
      const items: string[] = listParts.get(text)?.[0] ?? [];
      if (items.length === 0) {
        const parsed = JSON.parse(text) as { items?: unknown };
        if (Array.isArray(parsed?.items)) for (const item of parsed.items) items.push(JSON.stringify(item), JSON.stringify(item, null, 1));
      }
      for (const item of items) {
        const lines = ['ADDED', 'MODIFIED', 'DELETED'].flatMap((type) => [
          rawLine(type, item),
          Buffer.from(` {"type" : "${type}" ,\t"object" : ${item} } \r`),
          Buffer.from(`{"object":${item},"type":"${type}"}`),
          Buffer.from(`{"type":"${type}","object":${item},"extra":1}`),
          Buffer.from(`{"type":"${type}","object":${item},"type":"${type === 'DELETED' ? 'ADDED' : 'DELETED'}"}`),
          Buffer.from(`{"type":"${type}","object":{"metadata":{"name":"decoy"}},"object":${item}}`),
          Buffer.from(`{"t\\u0079pe":"${type}","object":${item}}`),
        ]);
        for (const drop of [true, false]) {
          const vias = sameAfterEach(lines, { exact: false, what: `${name} (dropManagedFields ${drop})`, dropManagedFields: drop });
          viaBytesCount += vias.filter((v) => v === 'bytes').length;
        }
      }
    }
    // Or this compared the object path with itself.
    expect(viaBytesCount).toBeGreaterThan(200);
  });

  it('store the same for 600 random pods spelled every way, in random order (fuzz)', () => {
    const seed = 4242;
    const rnd = prng(seed);
    const neu = member();
    const old = member();
    let compact = 0;
    let compactViaBytes = 0;
    const held: unknown[] = [];
    const from = new Map<unknown, number>();
    /** The store's events since the last call, with the objects they name as the cache holds them now. */
    const changes = (m: ReturnType<typeof member>, n: number) => {
      const since = m.seen.slice(from.get(m) ?? 0);
      from.set(m, m.seen.length);
      const objects = since.map((e) => {
        const stored = m.cache.pods.get((JSON.parse(e) as [string, string])[1]);
        return stored ? `${stored.rv} ${canon(JSON.parse(stored.json.toString()))} ${canon(stored.labels)} ${canon(stored.fields)}` : '-';
      });
      return [n, ...since, ...objects, m.cache.lastMemberRV(CLUSTER, 'pods')].join('\n');
    };
    for (let n = 0; n < 600; n++) {
      // Now and then an earlier pod again (changed or deleted), else a new one.
      const pod = held.length > 0 && rnd() < 0.3 ? structuredClone(held[Math.floor(rnd() * held.length)]) : randomPod(rnd, n);
      held.push(pod);
      const type = ['ADDED', 'MODIFIED', 'DELETED'][Math.floor(rnd() * 3)]!;
      const mode = rnd();
      const how: Spelling = { loose: mode < 0.2, inner: mode >= 0.2 && mode < 0.3 };
      const out: string[] = [];
      spell(JSON.parse(JSON.stringify(pod)), rnd, out, how, 2);
      const b = rawLine(type, out.join(''));
      const what = `seed ${seed}, case ${n}: ${JSON.stringify(b.toString('utf8').slice(0, 300))}`;
      const a = viaBytes(neu.sink, b);
      const o = viaObjects(old.sink, b);
      if (canon(a.rv) !== canon(o.rv)) throw new Error(`${what}: resourceVersion ${canon(a.rv)}, object path ${canon(o.rv)}`);
      // What this line changed after each line (the whole cache now and then: it grows).
      const [x, y] = n % 50 === 49 ? [contents(neu.cache, neu.seen, false), contents(old.cache, old.seen, false)] : [changes(neu, n), changes(old, n)];
      if (x !== y) throw new Error(`${what} (via ${a.via}):\n  new: ${x}\n  old: ${y}`);
      if (!how.loose && !how.inner) {
        compact++;
        if (a.via === 'bytes') compactViaBytes++;
      }
    }
    expect(compactViaBytes / compact).toBeGreaterThan(0.6);
  });

  it('leaves lines that are not JSON to the parse, which throws', () => {
    const good = rawLine('ADDED', JSON.stringify(realPod(1)));
    const text = good.toString();
    const bad = [
      text.slice(0, -1),
      text + '}',
      text + ' x',
      text.replace('"metadata":{', '"metadata":{,'),
      text.replace('"spec":{', '"spec":{"a":tru,'),
      `{"type":"ADDED","object":{"metadata":{"name":"p"}}`,
      `{"type":"ADDED","object":{"metadata":{"name":"p"}},}`,
      `{"type":"ADDED","object":{"metadata":{"name":"p"}}},`,
      `{"type":"ADDED","object":{"metadata":{"name":"p\u0001"}}}`,
      'not json',
    ];
    for (const t of bad) {
      const m = member();
      expect(() => viaBytes(m.sink, Buffer.from(t)), t).toThrow(SyntaxError);
      expect([...m.cache.pods.values()]).toEqual([]);
      expect(m.cache.lastMemberRV(CLUSTER, 'pods')).toBe('');
    }
    // Bytes that are not UTF-8: the object path decodes them with replacement characters, and so it stays.
    const latin = Buffer.concat([Buffer.from('{"type":"ADDED","object":{"metadata":{"name":"p","labels":{"a":"'), Buffer.from([0xff, 0xc3]), Buffer.from('"}}}}')]);
    const vias = sameAfterEach([latin], { exact: true, what: 'not UTF-8' });
    expect(vias).toEqual(['objects']);
  });
});

});

describe('splitLines', () => {
  const events = [
    line('ADDED', { metadata: { name: 'pöd-日本-😀', namespace: 'ns', resourceVersion: '11', labels: { a: 'ü' } } }),
    Buffer.from('   '),
    line('MODIFIED', { metadata: { name: 'pöd-日本-😀', namespace: 'ns', resourceVersion: '12', labels: { a: '€ 𝄞' } } }),
    Buffer.alloc(0),
    line('ADDED', { metadata: { name: 'q', namespace: 'ns', resourceVersion: '13' } }),
    line('DELETED', { metadata: { name: 'pöd-日本-😀', namespace: 'ns', resourceVersion: '14' } }),
  ];
  const stream = (last: boolean) => Buffer.concat(events.flatMap((e, i) => (i === events.length - 1 && !last ? [e] : [e, Buffer.from('\n')])));


  /** Every way to cut b in two, and a few in three. */
  function* cuts(b: Buffer): Generator<Buffer[]> {
    for (let k = 0; k <= b.length; k++) yield [b.subarray(0, k), b.subarray(k)];
    for (let k = 1; k < b.length; k += 7) for (let j = k; j < b.length; j += 13) yield [b.subarray(0, k), b.subarray(k, j), b.subarray(j)];
    yield [...b].map((c) => Buffer.from([c]));
  }

  it('gives the same lines however the stream is cut into chunks, with or without a last newline', async () => {
    for (const last of [true, false]) {
      const whole = stream(last);
      const want = await linesOf([whole]);
      expect(want).toEqual(events.map((e) => e.toString('latin1')));
      for (const chunks of cuts(whole)) expect(await linesOf(chunks)).toEqual(want);
    }
  });

  // ~1,800 cuts, each into a fresh cache whose slabs are fresh memory: on the shared VM the test took 1.7-26 s from
  // one run to the next (first writes to fresh pages cost it up to ~12 us each), past vitest's 10 s default.
  it('gives the cache the same state however the stream is cut into chunks', { timeout: 120_000 }, async () => {
    const whole = stream(true);
    const state = async (chunks: Buffer[]) => {
      const m = member();
      const rvs: unknown[] = [];
      await splitLines(
        (async function* () {
          yield* chunks;
        })(),
        (b, start, end) => {
          if (b.subarray(start, end).toString().trim() === '') return true;
          const d = viaBytes(m.sink, b, start, end);
          expect(d.via).toBe('bytes');
          rvs.push(d.rv);
          return true;
        },
      );
      return `${contents(m.cache, m.seen, true)}\n${rvs.join(',')}`;
    };
    const want = await state([whole]);
    expect(want).toContain('q');
    expect(want).toContain('11,12,13,14');
    for (const chunks of cuts(whole)) {
      const got = await state(chunks);
      if (got !== want) throw new Error(`cut at ${chunks.map((c) => c.length).join('+')}:\n  got: ${got}\n  want: ${want}`);
    }
  });

  it('stops at the line whose callback says so', async () => {
    const seen: string[] = [];
    await splitLines(
      (async function* () {
        yield Buffer.from('a\nb\nc');
        yield Buffer.from('\nd\n');
      })(),
      (b, s, e) => {
        seen.push(b.toString('utf8', s, e));
        return seen.length < 2;
      },
    );
    expect(seen).toEqual(['a', 'b']);
  });
});

// ---- the reflector, against a scripted member ----

const joinLines = (lines: Buffer[]) => Buffer.concat(lines.flatMap((l) => [l, Buffer.from('\n')]));


const vpod = (name: string, rv: string): KubeObject => ({ kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'ns', resourceVersion: rv, labels: { v: rv } }, spec: { nodeName: 'n' } });

withBothScans(() => {
describe('the reflector reading pod watch events as bytes', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  const run = async (steps: Step[], useWatchList = false) => {
    const srv = await scriptedMember(steps);
    const up = upstreamFromEndpoint({ name: 'm', url: srv.url, role: 'member cluster' });
    const m = member();
    const r = startReflector({ upstream: up, path: '/api/v1/pods', sink: m.sink, limiter: tokenBucket(1000, 1000), log, pageSize: 500, useWatchList, backoff: backoff({ initialMs: 5, maxMs: 20 }) });
    cleanup.push(() => srv.close(), () => up.close(), () => r.stop());
    const watches = () => srv.requests.filter((q) => q.get('watch') === '1');
    return { srv, m, r, watches };
  };

  it('stores what the object path stores and resumes from the last version, whatever the chunks', async () => {
    const lines = [...[0, 1, 2].flatMap((i) => lifeOf(realPod(i))), ...lifeOf(realPod(3)).slice(0, 2)];
    const body = joinLines(lines);
    const cutAt = [1, 17, Math.floor(body.length / 3), Math.floor(body.length / 3) + 1, body.indexOf(10), body.indexOf(10) + 1, body.length - 1];
    const before = watchPaths.bytes;
    const { m, r, watches } = await run([podList('900', []), watchBytes(body, cutAt)]);
    await until(() => watches().length === 2, 5000, 'the second watch');
    expect(r.stats.events).toBe(lines.length);
    expect(watchPaths.bytes - before).toBe(lines.length);
    // The old path, directly.
    const old = member();
    for (const l of lines) viaObjects(old.sink, l);
    expect(contents(m.cache, m.seen, true)).toBe(contents(old.cache, old.seen, true));
    const lastRV = (JSON.parse(lines.at(-1)!.toString()) as { object: KubeObject }).object.metadata.resourceVersion!;
    expect(watches()[1]!.get('resourceVersion')).toBe(lastRV);
    expect(r.resourceVersion).toBe(lastRV);
  });

  it('breaks the watch at a line that is not JSON: what came before stays, nothing after it is applied', async () => {
    const garbage = ['not json', '{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"12"}}', '{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"12"}}}}', `{"type":"MODIFIED","object":${JSON.stringify(vpod('a', '12'))}} x`];
    const steps: Step[] = [podList('10', [])];
    let rv = 10;
    for (const g of garbage) {
      rv++;
      steps.push(watchBytes(joinLines([line('MODIFIED', vpod('a', String(rv))), Buffer.from(g), line('MODIFIED', vpod('a', String(rv + 50)))])));
    }
    const { m, r, watches } = await run(steps);
    await until(() => watches().length === garbage.length + 1, 5000, 'a watch after every broken one');
    expect(watches().map((q) => q.get('resourceVersion'))).toEqual(['10', '11', '12', '13', '14']);
    expect(r.stats.events).toBe(garbage.length);
    const stored = [...m.cache.pods.values()].map((o) => JSON.parse(o.json.toString()).metadata.labels.v);
    expect(stored).toEqual(['14']);
    expect(m.cache.lastMemberRV(CLUSTER, 'pods')).toBe('14');
  });

  it('moves to a bookmark, and lists again on an ERROR 410', async () => {
    const { m, r, srv, watches } = await run([
      podList('10', [vpod('a', '5')]),
      watchBytes(joinLines([line('MODIFIED', vpod('a', '11')), line('BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '20' } })])),
      watchBytes(joinLines([line('ADDED', vpod('b', '21')), line('ERROR', { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410, reason: 'Expired', message: 'too old' }), line('ADDED', vpod('c', '22'))])),
      podList('30', [vpod('a', '11'), vpod('d', '29')]),
    ]);
    await until(() => watches().length === 3, 5000, 'the watch after the relist');
    expect(watches().map((q) => q.get('resourceVersion'))).toEqual(['10', '20', '30']);
    expect(srv.requests.map((q) => (q.get('watch') ? 'watch' : 'list'))).toEqual(['list', 'watch', 'watch', 'list', 'watch']);
    expect(r.stats.events).toBe(2);
    expect(r.stats.relists).toBe(1);
    const held = [...m.cache.pods.values()].map((o) => `${o.name}@${JSON.parse(o.json.toString()).metadata.labels.v}`).sort();
    expect(held).toEqual(['a@11', 'd@29']);
    expect(m.cache.lastMemberRV(CLUSTER, 'pods')).toBe('30');
  });

  it("reads a streaming list's initial events as a list, and only the changes after its closing bookmark as bytes", async () => {
    const initial = [line('ADDED', vpod('a', '5')), line('ADDED', vpod('b', '6'))];
    const end = line('BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '10', annotations: { 'k8s.io/initial-events-end': 'true' } } });
    const before = watchPaths.bytes;
    const { m, r, watches } = await run([watchBytes(joinLines([...initial, end, line('MODIFIED', vpod('a', '11'))]))], true);
    await until(() => watches().length === 2, 5000, 'the watch after the streaming list');
    expect(r.synced).toBe(true);
    expect(r.stats.events).toBe(1);
    expect(watchPaths.bytes - before).toBe(1);
    expect(watches()[1]!.get('resourceVersion')).toBe('11');
    const held = [...m.cache.pods.values()].map((o) => `${o.name}@${JSON.parse(o.json.toString()).metadata.labels.v}`).sort();
    expect(held).toEqual(['a@11', 'b@6']);
  });
});
});
