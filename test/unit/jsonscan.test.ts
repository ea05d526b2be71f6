// The WebAssembly scan (src/api/jsonscan.ts) against the byte scanner it stands in for (src/api/jsonbytes.ts
// skipValue): for any bytes, the same end of the value or the same refusal, the same two flags, and an index whose
// every entry is where the byte scanner ends that string or container. The intake's use of it is tested with every
// case of test/unit/intake-bytes.test.ts, which runs with the scan and without.

import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hugeNumbers, resetSpaced, skipValue, spaced } from '../../src/api/jsonbytes.js';
import { loadJSONScan, MAX_SCANNED_BYTES, mirrorJSON, setJSONScan, type JSONMirror } from '../../src/api/jsonscan.js';
import { listText, podList, podText, realPod } from '../support/podcases.js';
import { prng } from '../support/prng.js';
import { mutated } from '../support/mutate.js';

beforeAll(async () => {
  expect(await loadJSONScan()).toBeDefined();
});
afterEach(() => setJSONScan(true));

/** What the byte scanner makes of the value at i: its end, or that it throws, and its flags. */
function byteScanner(b: Buffer, i: number): { end: number; spaced: boolean; huge: boolean } {
  resetSpaced();
  let end = -1;
  try {
    end = skipValue(b, i);
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
  }
  return { end, spaced, huge: hugeNumbers };
}

function scanned(b: Buffer, i: number): { mirror: JSONMirror; end: number; spaced: boolean; huge: boolean } {
  const mirror = mirrorJSON(b)!;
  const end = mirror.value(i);
  return { mirror, end, spaced: mirror.spaced(), huge: mirror.huge() };
}

/** Every string and container start in b[i, end) (b is valid JSON there), by a walk of its own. */
function starts(b: Buffer, i: number, end: number): number[] {
  const out: number[] = [];
  for (let k = i; k < end; k++) {
    const c = b[k];
    if (c === 0x7b || c === 0x5b) out.push(k);
    else if (c === 0x22) {
      out.push(k);
      for (k++; b[k] !== 0x22; k++) if (b[k] === 0x5c) k++;
    }
  }
  return out;
}

/** Compares scan and byte scanner on b from i; for a value, checks every entry of the index. */
function agree(b: Buffer, i: number, where: () => string): void {
  const want = byteScanner(b, i);
  const got = scanned(b, i);
  if (got.end !== want.end) throw new Error(`the scan ends at ${got.end}, the byte scanner at ${want.end}: ${where()}`);
  if (want.end < 0) return;
  if (got.spaced !== want.spaced || got.huge !== want.huge) throw new Error(`flags spaced ${got.spaced}/${want.spaced}, huge ${got.huge}/${want.huge}: ${where()}`);
  for (const k of starts(b, i, want.end)) {
    const e = got.mirror.ends[k]!;
    const byBytes = skipValue(b, k);
    if ((e & 0x7fffffff) !== byBytes) throw new Error(`ends[${k}] is ${e & 0x7fffffff}, the byte scanner ends there at ${byBytes}: ${where()}`);
    if (b[k] === 0x22 && e < 0 !== b.subarray(k, byBytes).includes(0x5c)) throw new Error(`ends[${k}] says escaped ${e < 0}: ${where()}`);
  }
}

describe('the WebAssembly JSON scan against the byte scanner', () => {
  it('agrees on valid documents: ends, index and flags', () => {
    const docs = [
      '{"a":[1,-2.5e-3,true,false,null,"x\\u00e9\\n"]}', '[]', '{}', '0', '-0.0e+0', '"\\ud83d\\ude00"', '{"k":{"k":{"k":[[],{}]}}}', '[1 , 2 ]',
      '"é日😀"', '[1E5,0.5,123456789012345678901234567890]', 'true', 'null', 'false', '{"":""}', '"\\/\\b\\f\\n\\r\\t\\"\\\\"', '[-1,0,10,1.25,-0.5e-10]',
      '[1e300,1e299,12e298,-1e+300,1e-400,0.5e300]', '{ "a" :\t[ 1 ,\r\n2 ] }', `"${'x'.repeat(100)}\\"${'y'.repeat(31)}"`,
      listText([podText('"name":"p","labels":{"a":"b"}')]), podList([realPod(1), realPod(2, 'Pending')]),
    ];
    for (const d of docs) agree(Buffer.from(d), 0, () => JSON.stringify(d));
  });

  it('agrees on 25k mutated documents', () => {
    const seed = 20261128;
    const rnd = prng(seed);
    const docs = [
      '{"a":[1,-2.5e-3,true,false,null,"x\\u00e9\\n"]}', '[]', '{}', '0', '-12.5E+7', '"\\ud83d\\ude00 a longer string of text"', '{"k":{"k":{"k":[[],{}]}}}',
      '[1 , 2 ]', '[1E5,0.5,123456789012345678901234567890,1e299]', 'true', 'null', 'false', '{"":""}', '"\\/\\b\\f\\n\\r\\t\\"\\\\"',
      listText([podText('"name":"p","labels":{"a":"b"}')]), '{"a":{"b":[{"c":"d"},{"e":1e2}]},"f":"\\u0041"}',
    ].map((d) => Buffer.from(d));
    const units = [...'{}[]":,\\/ \t\n\r0123456789.-+eEtrufalsnxuaAfFgG', '\u0000', '\u0001', '\u001f', '\u007f', '\f', '\u000b', 'é', '😀', '\u00a0', 'true', 'null', '\\u00', '1e', '"a":', '[]', '{}', '1e300'].map((u) => Buffer.from(u));
    for (let n = 0; n < 25_000; n++) {
      const b = mutated(rnd, docs[Math.floor(rnd() * docs.length)]!, () => units[Math.floor(rnd() * units.length)]!);
      // A view into a larger buffer: the bytes after it must not be read.
      const view = Buffer.concat([b, Buffer.from('1]}"')]).subarray(0, b.length);
      agree(view, 0, () => `seed ${seed}, case ${n}: ${JSON.stringify(b.toString('latin1'))}`);
    }
  });

  it('refuses what is cut short at every byte of a pod list', () => {
    const full = Buffer.from(podList([realPod(7)]));
    for (let k = 0; k < full.length; k++) expect(scanned(full.subarray(0, k), 0).end, `cut at ${k}`).toBe(-1);
    expect(scanned(full, 0).end).toBe(full.length);
  });

  it('checks values one at a time in the same mirror, from where each starts', () => {
    const b = Buffer.from('[{"a":"x"} ,"s\\n", 12,{"b":[true]}]');
    const mirror = mirrorJSON(b)!;
    expect(mirror.value(1)).toBe(10);
    expect(mirror.ends[1]).toBe(10);
    expect(mirror.value(12)).toBe(17);
    expect(mirror.ends[12]! & 0x7fffffff).toBe(17);
    expect(mirror.ends[12]).toBeLessThan(0);
    expect(mirror.value(19)).toBe(21);
    expect(mirror.value(22)).toBe(34);
    // Only whitespace before a value counts as spaced, not where a value was asked for.
    expect(mirror.spaced()).toBe(false);
    expect(mirror.value(0)).toBe(b.length);
    expect(mirror.spaced()).toBe(true);
  });

  it('mirrors a part of a buffer: positions stay the buffer\'s, and nothing past the part is read', () => {
    const b = Buffer.from('xx{"a":"b\\n","c":[1]}{"d":1}yy');
    const mirror = mirrorJSON(b, 2, 21)!;
    expect(mirror.base).toBe(2);
    expect(mirror.value(2)).toBe(21);
    // ends are the part's: entry i - base, value + base is b's index.
    expect((mirror.ends[7 - 2]! & 0x7fffffff) + 2).toBe(12);
    expect(mirror.ends[7 - 2]).toBeLessThan(0);
    expect((mirror.ends[17 - 2]! & 0x7fffffff) + 2).toBe(20);
    // The next object is in b but past the part: it runs off the copy's end.
    const whole = mirrorJSON(b, 2, 28)!;
    expect(whole.value(21)).toBe(28);
    const cut = mirrorJSON(b, 2, 27)!;
    expect(cut.value(2)).toBe(21);
    expect(cut.value(21)).toBe(-1);
  });

  it('leaves nesting deeper than its stack to the byte scanner, and takes what fits', () => {
    // 4,096 open at once, and the innermost empty one, which is never pushed.
    for (const [depth, want] of [[4097, 'all'], [4098, -2], [100_000, -2]] as const) {
      const b = Buffer.from('['.repeat(depth) + ']'.repeat(depth));
      expect(scanned(b, 0).end, `depth ${depth}`).toBe(want === 'all' ? b.length : want);
    }
  });

  it('grows its memory for a larger page and reads the right bytes after it', () => {
    const small = Buffer.from(podList([realPod(1)]));
    const large = Buffer.from(podList(Array.from({ length: 400 }, (_, i) => realPod(i))));
    for (const b of [small, large, small, large]) agree(b, 0, () => `${b.length} bytes`);
  });

  it('takes no page larger than its limit, and none when turned off', () => {
    expect(mirrorJSON(Buffer.alloc(MAX_SCANNED_BYTES + 1, 0x20))).toBeUndefined();
    setJSONScan(false);
    expect(mirrorJSON(Buffer.from('{}'))).toBeUndefined();
  });
});
