import { describe, expect, it } from 'vitest';
import { parseProjected, type Projection } from '../../src/api/projection.js';

/** What the projection promises: JSON.parse's values for the named parts, nothing else. */
function byHand(v: any, p: Projection): any {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const out: any = {};
  for (const k of Object.keys(p)) {
    if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
    const want = p[k]!;
    const x = v[k];
    if (want === true) out[k] = x;
    else if (want === 'length') out[k] = Array.isArray(x) ? new Array(x.length) : x;
    else out[k] = x !== null && typeof x === 'object' && !Array.isArray(x) ? byHand(x, want) : x;
  }
  return out;
}

const POD_READS: Projection = { metadata: true, spec: { containers: 'length', initContainers: true, nodeName: true }, status: true };

describe('parseProjected', () => {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', labels: { 'a"b': 'c\\"}]{[', '2': 'x', '10': 'y' }, annotations: { html: '<b>&\u2028', emoji: '\u{1f600} é' } },
    spec: {
      containers: [{ name: 'a', args: ['}', ']', '"', '\\'] }, { name: 'b', env: [{ name: '[{', value: '"}' }] }, { name: 'c' }],
      nodeName: 'n1',
      volumes: [{ name: 'v', emptyDir: {} }],
    },
    status: { phase: 'Running', containerStatuses: [{ name: 'a', ready: true, restartCount: 3 }], n: -1.5e-7, t: true, f: false, z: null },
  };

  it('gives what JSON.parse gives for the named parts, from a string or UTF-8 bytes', () => {
    const text = JSON.stringify(pod);
    const want = byHand(JSON.parse(text), POD_READS);
    expect(parseProjected(text, POD_READS)).toEqual(want);
    expect(parseProjected(Buffer.from(text), POD_READS)).toEqual(want);
    expect(parseProjected(new Uint8Array(Buffer.from(text)), POD_READS)).toEqual(want);
    // The counted array has the right length and nothing in it.
    const got = parseProjected(text, POD_READS);
    expect(got.spec.containers).toHaveLength(3);
    expect(Object.keys(got.spec.containers)).toEqual([]);
    expect(Object.keys(got)).toEqual(['metadata', 'spec', 'status']);
    expect(Object.keys(got.spec)).toEqual(['containers', 'nodeName']);
  });

  it('reads a view of part of a larger buffer', () => {
    const text = JSON.stringify(pod);
    const big = Buffer.from(`xx${text}yy`);
    expect(parseProjected(big.subarray(2, big.length - 2), POD_READS)).toEqual(byHand(pod, POD_READS));
  });

  it('tolerates whitespace anywhere JSON allows it', () => {
    const text = JSON.stringify(pod, null, '\t').replace(/\n/g, '\r\n ');
    expect(parseProjected(` \n${text}\n `, POD_READS)).toEqual(byHand(pod, POD_READS));
  });

  it('parses whole what is not of the expected type: null, arrays, scalars', () => {
    const cases = [
      { spec: null, status: [1, { a: 2 }] },
      { spec: { containers: null, initContainers: 7 } },
      { spec: { containers: { name: 'x' } } },
      { spec: [] },
      { spec: 'text', metadata: 3 },
      { spec: { containers: [] } },
      {},
    ];
    for (const c of cases) expect(parseProjected(JSON.stringify(c), POD_READS)).toEqual(byHand(c, POD_READS));
  });

  it('is JSON.parse for anything but an object', () => {
    expect(parseProjected('[1,2]', POD_READS)).toEqual([1, 2]);
    expect(parseProjected(' null', POD_READS)).toBeNull();
    expect(parseProjected('"s"', POD_READS)).toBe('s');
  });

  it('takes the last of duplicate keys, as JSON.parse does', () => {
    const text = '{"spec":{"nodeName":"a","containers":[1]},"spec":{"nodeName":"b","containers":[1,2]}}';
    expect(parseProjected(text, POD_READS)).toEqual({ spec: { nodeName: 'b', containers: new Array(2) } });
  });

  it('matches keys written with escapes by their value', () => {
    expect(parseProjected('{"\\u006eodeName":1,"n\\"x":2}', { nodeName: true, 'n"x': true })).toEqual({ nodeName: 1, 'n"x': 2 });
    // A key that differs only past a prefix, or by length, does not match.
    expect(parseProjected('{"nodeNam":1,"nodeNames":2,"nodeNamf":3}', { nodeName: true })).toEqual({});
  });

  it('records the text of top-level values parsed whole', () => {
    const texts: Record<string, string> = {};
    const text = JSON.stringify(pod);
    parseProjected(text, POD_READS, texts);
    expect(texts).toEqual({ metadata: JSON.stringify(pod.metadata), status: JSON.stringify(pod.status) });
  });

  it('finds the last value asked for wherever it is: last, not last, twice, after trailing space', () => {
    const m = { name: 'x' };
    const docs = [
      { metadata: m, spec: { nodeName: 'n' }, status: { phase: 'Running' } },
      { metadata: m, spec: { nodeName: 'n' }, status: { phase: 'Running' }, zz: { a: 1 } },
      { status: { phase: 'Running' }, metadata: m, spec: { nodeName: 'n' } },
      { metadata: m, status: [1, 2], spec: { containers: [{}, {}] } },
      { metadata: m, spec: { nodeName: 'n' }, status: 'Running' },
    ];
    for (const d of docs) {
      const texts: Record<string, string> = {};
      const text = JSON.stringify(d);
      expect(parseProjected(text, POD_READS, texts)).toEqual(byHand(d, POD_READS));
      expect(texts.status).toBe(JSON.stringify(d.status));
      const spaced = JSON.stringify(d, null, 2);
      const spacedTexts: Record<string, string> = {};
      expect(parseProjected(`${spaced} \n`, POD_READS, spacedTexts)).toEqual(byHand(d, POD_READS));
      expect(JSON.parse(spacedTexts.status!)).toEqual(d.status);
      expect(spacedTexts.status).toBe(spacedTexts.status!.trim());
    }
    const twice = '{"metadata":{},"spec":{},"status":{"a":1},"status":{"a":2}}';
    expect(parseProjected(twice, POD_READS)).toEqual({ metadata: {}, spec: {}, status: { a: 2 } });
  });

  it('counts arrays of every element type', () => {
    const a = [[], [[]], {}, { '[': ']' }, '', '\\', '"', 0, -1e5, true, false, null, '\u{1f600}'];
    expect(parseProjected(JSON.stringify({ a, b: 1 }), { a: 'length', b: true })).toEqual({ a: new Array(a.length), b: 1 });
    expect(parseProjected('{ "a" : [ ] , "b" : [ 1 , [ 2 ] ] }', { a: 'length', b: 'length' })).toEqual({ a: [], b: new Array(2) });
  });
});
