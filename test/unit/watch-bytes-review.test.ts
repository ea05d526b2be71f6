// Review of the pod watch byte path (f9a935f: reflector.ts splitLines/onLine, intake.ts watchEventOf and
// encodePodBytes, merged.ts applyBytes) from a watch consumer's side: frames the byte scanner might take where the
// parse decides otherwise, deletions keyed as keyOfMember keys them, the reflector's resourceVersion and stats, the
// store keeping no view of a stream chunk, and lines cut out of chunks at awkward places.

import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { withBothScans } from '../support/scanmodes.js';
import type { KubeObject } from '../../src/api/meta.js';
import { watchEventOf, watchPaths } from '../../src/cache/intake.js';
import { CLUSTER_LABEL, MergedCache } from '../../src/cache/merged.js';
import { backoff, tokenBucket } from '../../src/cache/ratelimit.js';
import { startReflector } from '../../src/cache/reflector.js';
import { upstreamFromEndpoint } from '../../src/upstream/client.js';
import { podList, scriptedMember, watchBytes, type Step } from '../support/scriptedmember.js';
import { until } from '../support/until.js';
import { linesOf, viaBytes, viaObjects, type Delivery, type Via } from '../support/watchdelivery.js';
import { MANAGED_FIELDS, canon, realPod } from '../support/podcases.js';

const log = pino({ level: 'silent' });
const CLUSTER = 'member-r';

function member() {
  const cache = new MergedCache({ instanceID: 't', windowSize: 10_000, dropManagedFields: true, rvBase: 5_000_000 });
  const sink = cache.sink(CLUSTER, 'pods');
  const seen: string[] = [];
  cache.pods.subscribe((ev) => seen.push(JSON.stringify([ev.type, ev.object.key, ev.object.rv])));
  return { cache, sink, seen };
}

/** Everything a client could see of the cache: objects (exact bytes), labels, fields, member versions, events. */
function contents(m: ReturnType<typeof member>): string {
  const objects = [...m.cache.pods.values()].map((o) => {
    const memberRV = m.cache.owners('pods', o.namespace, o.name).find((w) => w.cluster === CLUSTER)?.memberRV;
    return JSON.stringify([o.key, o.rv, o.json.toString('utf8'), canon(o.labels), canon(o.fields), memberRV]);
  });
  return [...objects.sort(), `lastSeen ${m.cache.lastMemberRV(CLUSTER, 'pods')}`, ...m.seen].join('\n');
}


const attempt = (f: () => Delivery): Delivery => {
  try {
    return f();
  } catch (e) {
    if (e instanceof SyntaxError) return { via: 'threw' };
    throw e;
  }
};

/** Feeds lines to a cache by each path; the two must agree after every line. Returns the byte side's paths. */
function agree(lines: string[], what: string): Via[] {
  const neu = member();
  const old = member();
  return lines.map((l, i) => {
    const a = attempt(() => viaBytes(neu.sink, Buffer.from(l)));
    const b = attempt(() => viaObjects(old.sink, l));
    const where = `${what}, line ${i}: ${JSON.stringify(l.slice(0, 200))}`;
    expect(a.via === 'threw', where).toBe(b.via === 'threw');
    expect(a.via === 'ignored', where).toBe(b.via === 'ignored');
    expect(a.rv, where).toBe(b.rv);
    expect(contents(neu), where).toBe(contents(old));
    return a.via;
  });
}

const pod = (name: string, rv: string | undefined, extra: Record<string, unknown> = {}): KubeObject => {
  const p = { kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'ns', labels: { app: 'web' } as Record<string, string>, ...(rv === undefined ? {} : { resourceVersion: rv }) }, spec: { nodeName: 'n-1' }, status: { phase: 'Running' }, ...extra } as KubeObject;
  return p;
};
const frame = (type: string, obj: unknown) => JSON.stringify({ type, object: obj });

// The byte path's cases run with the WebAssembly scan and with the byte scanner alone (test/support/scanmodes.ts);
// splitLines, which only cuts lines, once.
withBothScans(() => {
describe('frames: what the byte path takes, the parse would take the same way', () => {
  it('odd frames go to the parse, which decides as before', () => {
    const p = JSON.stringify(pod('a', '10'));
    const p2 = JSON.stringify(pod('a', '11'));
    const lines = [
      `{"type":"ADDED","object":${p}}`,
      // A repeated "type" before the object: JSON.parse keeps DELETED.
      `{"type":"ADDED","type":"DELETED","object":${p2}}`,
      `{"type":"ADDED","object":${p}}`,
      // The object first; extra keys before, between and after; keys escaped.
      `{"object":${p2},"type":"MODIFIED"}`,
      `{"kind":"WatchEvent","type":"DELETED","object":${p2}}`,
      `{"type":"ADDED","extra":{"object":1},"object":${p}}`,
      `{"type":"MODIFIED","object":${p2},"object":${p}}`,
      `{"type":"DELETED","\\u006fbject":${p}}`,
      `{"type":"ADD\\u0045D","object":${p2}}`,
      // Types of another case or spelling are ignored by the parse; the byte path must not take them.
      `{"type":"added","object":${JSON.stringify(pod('b', '12'))}}`,
      `{"type":"Modified","object":${JSON.stringify(pod('b', '13'))}}`,
      `{"type":"ADDED ","object":${JSON.stringify(pod('b', '14'))}}`,
      `{"type":"DELETEDX","object":${p}}`,
      `{"type":null,"object":${p}}`,
      `{"type":1,"object":${p}}`,
      `{"type":"BOOKMARK","object":${JSON.stringify(pod('c', '15'))}}`,
      // Objects that are not pods the cache can take.
      `{"type":"ADDED","object":null}`,
      `{"type":"ADDED","object":{}}`,
      `{"type":"ADDED","object":{"metadata":null}}`,
      `{"type":"ADDED","object":{"metadata":{"namespace":"ns","resourceVersion":"16"}}}`,
      `{"type":"ADDED","object":{"metadata":{"name":"","resourceVersion":"17"}}}`,
      `{"type":"ADDED","object":{"metadata":{"name":7,"resourceVersion":"18"}}}`,
      `{"type":"ADDED","object":{"metadata":{"name":"d","resourceVersion":19}}}`,
      `{"type":"ADDED","object":[]}`,
      // Whitespace and line ends a proxy may add.
      `{"type":"MODIFIED","object":${JSON.stringify(pod('a', '20'))}}\r`,
      `\t {"type":"MODIFIED","object":${JSON.stringify(pod('a', '21'))}}\t\r`,
      `{"type":"MODIFIED","object":${JSON.stringify(pod('a', '22'))}\r}`,
      '',
      ' ',
      '\r',
      ' \t\r ',
      // Not JSON: both throw.
      `{"type":"MODIFIED","object":${JSON.stringify(pod('a', '23'))}}}`,
      `{"type":"MODIFIED","object":${JSON.stringify(pod('a', '24'))}} }`,
      `{"type":"MODIFIED","object":${JSON.stringify(pod('a', '25'))}}{"type":"MODIFIED","object":${JSON.stringify(pod('a', '26'))}}`,
      `{"type":"MODIFIED","object":${JSON.stringify(pod('a', '27'))},}`,
      `{"type":"MODIFIED","object":${JSON.stringify(pod('a', '28'))}}\u00a0`,
      `\ufeff{"type":"MODIFIED","object":${JSON.stringify(pod('a', '29'))}}`,
      `{"type":"MODIFIED""object":${JSON.stringify(pod('a', '30'))}}`,
      `{"type":"MODIFIED",,"object":${JSON.stringify(pod('a', '31'))}}`,
      `{"type":"MODIFIED","object":${JSON.stringify(pod('a', '32'))}`,
    ];
    const vias = agree(lines, 'odd frames');
    // The byte path was in play: the plain frames and those with whitespace around the object.
    expect(vias.filter((v) => v === 'bytes').length).toBeGreaterThanOrEqual(5);
    expect(vias[1]).toBe('objects');
    expect(vias[3]).toBe('objects');
    expect(vias.slice(-9).every((v) => v === 'threw')).toBe(true);
  });

  it('a line is read only within its bounds: what follows it in the chunk does not change the outcome', () => {
    const next = `{"type":"ADDED","object":${JSON.stringify(pod('z', '99'))}}`;
    const cases = ['', ' ', '\r', `{"type":"ADDED","object":${JSON.stringify(pod('a', '1'))}`, `{"type":"ADDED","object":{"metadata":{"name":"a"`, `{"type":"ADDED"`, `{"type":"ADDED","object":`];
    for (const c of cases) {
      const chunk = Buffer.from(`${c}\n${next}\n`);
      const alone = member();
      const inChunk = member();
      const a = attempt(() => viaBytes(alone.sink, Buffer.from(c)));
      const b = attempt(() => viaBytes(inChunk.sink, chunk, 0, Buffer.byteLength(c)));
      expect(b, JSON.stringify(c)).toEqual(a);
      expect(contents(inChunk), JSON.stringify(c)).toBe(contents(alone));
    }
  });
});

describe('deletions read as bytes', () => {
  it('remove the key keyOfMember gives: no namespace, escaped and non-ASCII names, stale versions', () => {
    const noNs = { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'cluster-wide', resourceVersion: '5' } };
    const lines = [
      frame('ADDED', noNs),
      frame('ADDED', pod('abc', '6')),
      frame('ADDED', pod('pöd-日本-😀', '7')),
      frame('ADDED', { ...pod('held', '8'), metadata: { name: 'held', namespace: 'n\u0073', resourceVersion: '8' } }),
      // Deleted with their names spelled otherwise, at other versions.
      `{"type":"DELETED","object":{"metadata":{"name":"cluster-wide","resourceVersion":"40"}}}`,
      `{"type":"DELETED","object":{"metadata":{"name":"\\u0061bc","namespace":"n\\u0073","resourceVersion":"3"}}}`,
      `{"type":"DELETED","object":{"metadata":{"namespace":"ns","name":"p\\u00f6d-\\u65e5\\u672c-\\ud83d\\ude00"}}}`,
      // A deleted pod that carries the cluster label the gateway sets: still removed.
      frame('DELETED', { metadata: { name: 'held', namespace: 'ns', resourceVersion: '41', labels: { [CLUSTER_LABEL]: 'other' } } }),
      // Deleting what is not held.
      frame('DELETED', pod('never', '42')),
    ];
    const vias = agree(lines, 'deletions');
    expect(vias).toEqual(Array(lines.length).fill('bytes'));
    const m = member();
    for (const l of lines) viaBytes(m.sink, Buffer.from(l));
    expect([...m.cache.pods.values()]).toEqual([]);
    expect(m.cache.lastMemberRV(CLUSTER, 'pods')).toBe('42');
  });

  it('a deletion with managedFields, escapes or a namespace of its own is keyed the same', () => {
    const full = realPod(3) as any;
    full.metadata.managedFields = MANAGED_FIELDS;
    const lines = [frame('ADDED', full), frame('MODIFIED', { ...full, metadata: { ...full.metadata, resourceVersion: '2000' } }), frame('DELETED', { ...full, metadata: { ...full.metadata, namespace: 'elsewhere' } }), frame('DELETED', full)];
    expect(agree(lines, 'deletion of a real pod')).toEqual(['bytes', 'bytes', 'bytes', 'bytes']);
  });
});

describe('versions and the unchanged check', () => {
  it('a MODIFIED at the version held stores nothing new but moves the version; one without a version moves nothing', () => {
    const lines = [
      frame('ADDED', pod('a', '10')),
      frame('MODIFIED', pod('a', '10')),
      // Same member version, different content: the cache keeps what it holds (as the object path does).
      frame('MODIFIED', { ...pod('a', '10'), status: { phase: 'Failed' } }),
      frame('MODIFIED', pod('a', undefined)),
      frame('MODIFIED', pod('a', '')),
      `{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"1\\u0032"}}}`,
      frame('DELETED', pod('a', undefined)),
      frame('ADDED', pod('a', '13')),
    ];
    const vias = agree(lines, 'versions');
    expect(vias).toEqual(Array(lines.length).fill('bytes'));
    const m = member();
    const rvs = lines.map((l) => viaBytes(m.sink, Buffer.from(l)).rv);
    expect(rvs).toEqual(['10', '10', '10', undefined, undefined, '12', undefined, '13']);
    // Stored: the ADDED; not the MODIFIEDs at 10; those without a version (or an empty one), 12, the delete, the add.
    expect(m.seen.map((e) => JSON.parse(e)[0])).toEqual(['ADDED', 'MODIFIED', 'MODIFIED', 'MODIFIED', 'DELETED', 'ADDED']);
  });
});

describe('JSON as Go writes it', () => {
  it('is taken as bytes and holds the same value as the parse gives (the member bytes are kept, not re-spelled)', () => {
    // encoding/json sorts map keys as strings ("10" before "9"), escapes <, > and & and writes float fields as
    // given; JSON.parse + stringify reorders integer-like keys, unescapes, and rounds integers beyond 2^53. The
    // byte path keeps the member's spelling (and digits), so the stored bytes differ from the object path's while
    // a JavaScript client reads the same value.
    const text = `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5","labels":{"10":"x","9":"y","app":"w"},"annotations":{"note":"a\\u003cb\\u0026c\\u2028"}},"spec":{"securityContext":{"runAsUser":9007199254740993},"terminationGracePeriodSeconds":30.0}}}`;
    const neu = member();
    const old = member();
    expect(viaBytes(neu.sink, Buffer.from(text)).via).toBe('bytes');
    viaObjects(old.sink, text);
    const [a, b] = [neu, old].map((m) => [...m.cache.pods.values()][0]!);
    expect(canon(JSON.parse(a!.json.toString()))).toBe(canon(JSON.parse(b!.json.toString())));
    expect(a!.json.toString()).toContain('9007199254740993');
    expect(canon(a!.labels)).toBe(canon(b!.labels));
    expect(canon(a!.fields)).toBe(canon(b!.fields));
  });
});

describe('memory: the store keeps no view of the stream', () => {
  it('stored JSON, labels, fields and keys stay when the chunk is overwritten, and share no memory with it', () => {
    const p = realPod(7) as any;
    p.metadata.managedFields = MANAGED_FIELDS;
    const lines = [frame('ADDED', p), frame('MODIFIED', { ...p, metadata: { ...p.metadata, resourceVersion: '9999', labels: { ...p.metadata.labels, ü: 'ö' } } })];
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let at = 0;
    const m = member();
    for (const l of lines) {
      const n = chunk.write(`${l}\n`, at);
      expect(viaBytes(m.sink, chunk, at, at + n - 1).via).toBe('bytes');
      at += n;
    }
    const before = contents(m);
    const stored = [...m.cache.pods.values()];
    expect(stored).toHaveLength(1);
    for (const o of stored) expect(o.json.buffer).not.toBe(chunk.buffer);
    chunk.fill(0x78);
    expect(contents(m)).toBe(before);
    expect(JSON.parse(stored[0]!.json.toString()).metadata.labels.ü).toBe('ö');
  });
});

});

describe('splitLines at awkward cuts', () => {
  const B = (s: string) => Buffer.from(s, 'latin1');

  it('boundaries right after a newline, chunks of only newlines, empty chunks, many lines in one chunk', async () => {
    expect(await linesOf([B('a\n'), B('b\n'), B('c')])).toEqual(['a', 'b', 'c']);
    expect(await linesOf([B('a'), B('\n'), B('\n'), B('b')])).toEqual(['a', '', 'b']);
    expect(await linesOf([B('\n')])).toEqual(['']);
    expect(await linesOf([B('a'), B(''), B(''), B('b\n'), B(''), B('c\n')])).toEqual(['ab', 'c']);
    expect(await linesOf([B('x\r\ny\r\n')])).toEqual(['x\r', 'y\r']);
    const many = Array.from({ length: 5000 }, (_, i) => `l${i}`);
    expect(await linesOf([B(`${many.join('\n')}\n`)])).toEqual(many);
    expect(await linesOf([])).toEqual([]);
    expect(await linesOf([B('a\n')])).toEqual(['a']);
  });

  it('a line longer than several chunks arrives whole, and its bytes are its own', async () => {
    const long = 'q'.repeat(64 * 1024 * 3 + 17);
    const whole = B(`a\n${long}\nb`);
    const chunks: Buffer[] = [];
    for (let i = 0; i < whole.length; i += 64 * 1024) chunks.push(Buffer.from(whole.subarray(i, i + 64 * 1024)));
    expect(chunks.length).toBeGreaterThan(3);
    expect(await linesOf(chunks)).toEqual(['a', long, 'b']);
  });

  it('pods stored through the reflector whatever the line ends, blank lines and a last line without newline', async () => {
    const lines = [frame('ADDED', pod('a', '11')), frame('MODIFIED', pod('a', '12')), frame('ADDED', pod('b', '13')), frame('DELETED', pod('a', '14')), frame('MODIFIED', pod('b', '15'))];
    // \r\n endings, a blank line, a whitespace-only line, the last line without a newline.
    const body = Buffer.from(`${lines[0]}\r\n\r\n${lines[1]}\r\n   \n${lines[2]}\n\n${lines[3]}\r\n${lines[4]}`);
    const before = watchPaths.bytes;
    const { m, r, watches } = await run([podList('10'), watchBytes(body, [1, body.indexOf(10) + 1, body.indexOf(10) + 2, Math.floor(body.length / 2), body.length - 1])]);
    await until(() => watches().length === 2, 5000, 'the second watch');
    expect(watchPaths.bytes - before).toBe(lines.length);
    expect(r.stats.events).toBe(lines.length);
    expect(watches()[1]!.get('resourceVersion')).toBe('15');
    const old = member();
    for (const l of lines) viaObjects(old.sink, l);
    expect(contents(m)).toBe(contents(old));
  });
});

// ---- a scripted member for the reflector ----

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function run(steps: Step[]) {
  const srv = await scriptedMember(steps);
  const requests = srv.requests;
  const up = upstreamFromEndpoint({ name: 'm', url: srv.url, role: 'member cluster' });
  const m = member();
  const r = startReflector({ upstream: up, path: '/api/v1/pods', sink: m.sink, limiter: tokenBucket(1000, 1000), log, pageSize: 500, useWatchList: false, backoff: backoff({ initialMs: 5, maxMs: 20 }) });
  cleanup.push(
    () => srv.close(),
    () => up.close(),
    () => r.stop(),
  );
  return { m, r, watches: () => requests.filter((q) => q.get('watch') === '1') };
}
