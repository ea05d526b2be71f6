// Member pods and pages for the intake tests (test/unit/intake-bytes.test.ts, test/unit/watch-bytes.test.ts):
// realistic ones from the simulator's generator, awkward but valid JSON, and random ones spelled every way JSON
// allows.

import type { KubeObject } from '../../src/api/meta.js';
import { CLUSTER_LABEL } from '../../src/cache/intake.js';
import { generatePod } from '../sim/podgen.js';

// ---- comparing by value ----

/**
 * A value as a string that two values share when a client cannot tell them apart: keys sorted (own keys only, so
 * a "__proto__" label counts), -0 as 0 (JSON.stringify writes it 0; kept bytes may say -0). Numbers JSON cannot
 * carry (1e400 parses to Infinity; JSON.stringify writes null) stay distinct, as do undefined and a missing key.
 */
export function canon(v: unknown): string {
  return JSON.stringify(norm(v));
}

export function norm(v: unknown): unknown {
  if (typeof v === 'number') return Object.is(v, -0) ? 0 : Number.isFinite(v) ? v : `<number ${v}>`;
  if (v === undefined) return '<undefined>';
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return ['<array>', ...v.map(norm)];
  return ['<object>', ...Object.keys(v).sort().map((k) => [k, norm((v as Record<string, unknown>)[k])])];
}

// ---- pages ----

export function podList(items: unknown[], list: Record<string, unknown> = { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1234' } }): string {
  return JSON.stringify({ ...list, items });
}

/** The items and head each listText was made of, by its text. */
export const listParts = new Map<string, [string[], string]>();

/** A list's text around items given as JSON text. */
export function listText(items: string[], head = '"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"77"}'): string {
  const text = `{${head}${head ? ',' : ''}"items":[${items.join(',')}]}`;
  listParts.set(text, [items, head]);
  return text;
}

/**
 * The page, and when it is a list of several items each item in a list of its own: an item the byte path does not
 * take sends the whole page to the object path, so alone is where the others are read as bytes.
 */
export function pagesOf(text: string): string[] {
  const parts = listParts.get(text);
  if (!parts || parts[0].length < 2) return [text];
  return [text, ...parts[0].map((item) => listText([item], parts[1]))];
}

/** A small pod's text with the given metadata members (JSON text). */
export function podText(meta: string, rest = '"spec":{"nodeName":"n-1","schedulerName":"default-scheduler"},"status":{"phase":"Running","podIP":"10.0.0.1"}'): string {
  return `{"metadata":{${meta}}${rest ? ',' : ''}${rest}}`;
}

export function realPod(index: number, phase?: 'Running' | 'Pending' | 'Succeeded' | 'Failed'): KubeObject {
  const { pod, status } = generatePod({ namespace: `ns-${index % 3}`, app: ['web', 'api', 'db'][index % 3]!, index, node: `node-${index % 10}`, phase }, new Date(Date.UTC(2026, 0, 1)));
  (pod as any).status = status;
  pod.metadata.resourceVersion = String(1000 + index);
  return pod;
}

export const MANAGED_FIELDS = [
  { manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'v1', time: '2026-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } } } },
  { manager: 'kubelet', operation: 'Update', apiVersion: 'v1', time: '2026-01-01T00:00:01Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': { 'f:phase': {} } }, subresource: 'status' },
];


export const R = String.raw;

/** Pod pages of awkward but valid JSON, by what is awkward in them. */
export const AWKWARD_PAGES: [string, string][] = [
  ['escapes in strings', listText([podText(R`"name":"a\"b\\c\/d\b\f\n\r\t\u00e9\u00E9\uD83D\uDE00\u0000","namespace":"n\u0073","labels":{"k\u0031":"v\"\\\/"},"annotations":{"x":"\u2028\u2029\ufeff\uFFFF"}`)])],
  ['escaped lone surrogates', listText([podText(R`"name":"p","labels":{"a":"\uD800","b":"\uDC00x","c":"\uDBFF\uDBFF","\uD800":"k"},"annotations":{"d":"x\uDFFF"}`)])],
  ['raw non-ASCII UTF-8', listText([podText(`"name":"pöd-日本-😀","namespace":"ns-ü","labels":{"名前":"ünïcödé 🚀","a":"\u2028"},"annotations":{"note":"€ 𝄞 ✓"}`)])],
  ['escaped keys', listText([`{"meta\\u0064ata":{"n\\u0061me":"p","n\\u0061mespace":"ns","l\\u0061bels":{"a":"b"},"resourceVersi\\u006fn":"9","managedFi\\u0065lds":[{"manager":"x"}]},"sp\\u0065c":{"nodeN\\u0061me":"n1","host\\u004eetwork":true},"st\\u0061tus":{"ph\\u0061se":"Running","podIPs":[{"\\u0069p":"1.2.3.4"}]},"kin\\u0064":"Pod"}`], R`"kin\u0064":"PodList","apiVersi\u006fn":"v1","metad\u0061ta":{"resourceVersi\u006fn":"5","c\u006fntinue":"c"}`)],
  ['escaped items key', R`{"kind":"PodList","apiVersion":"v1","\u0069tems":[{"metadata":{"name":"p"}}]}`],
  ['escaped cluster label key', listText([podText(R`"name":"p","labels":{"fleetgate.io\/cluster":"evil","fleetgate.io\u002fcluster":"evil2","app":"x"}`)])],
  ['member cluster label', listText([podText(`"name":"p","labels":{"${CLUSTER_LABEL}":"evil","app":"x"}`), podText(`"name":"q","labels":{"${CLUSTER_LABEL}":"evil"}`)])],
  ['duplicate metadata', listText([`{"metadata":{"name":"first","namespace":"a","labels":{"x":"1"}},"spec":{"nodeName":"n"},"metadata":{"name":"second","resourceVersion":"3"}}`])],
  ['duplicate name, namespace, resourceVersion', listText([podText(`"name":"first","namespace":"a","resourceVersion":"1","name":"second","namespace":"b","resourceVersion":"2"`)])],
  ['duplicate labels', listText([podText(`"name":"p","labels":{"a":"1","${CLUSTER_LABEL}":"x"},"labels":{"b":"2"}`), podText(`"name":"q","labels":{"a":"1"},"labels":null`), podText(`"name":"r","labels":null,"labels":{"c":"3"}`)])],
  ['duplicate label keys', listText([podText(`"name":"p","labels":{"a":"1","a":"2","${CLUSTER_LABEL}":"x","${CLUSTER_LABEL}":"y"}`)])],
  ['managedFields first, between, last', listText([`{"metadata":{"managedFields":[{"manager":"x","fieldsV1":{"f:a":{}}}],"name":"p","resourceVersion":"3"}}`, `{"metadata":{"name":"q","managedFields":[],"labels":{"a":"b"}}}`, `{"metadata":{"name":"r","labels":{},"managedFields":{"x":[1,{"y":"}"}]}}}`, `{"metadata":{"managedFields":null,"name":"s"}}`, `{"spec":{},"metadata":{"name":"t","managedFields":"x"},"status":{}}`])],
  ['duplicate managedFields', listText([podText(`"name":"p","managedFields":[{"manager":"a"}],"managedFields":null`), podText(`"name":"q","managedFields":null,"managedFields":[{"manager":"b"}]`)])],
  ['duplicate kind, spec, status', listText([`{"kind":"X","metadata":{"name":"p"},"spec":{"nodeName":"a"},"status":{"phase":"Failed"},"kind":"Pod","spec":{"nodeName":"b"},"status":null}`])],
  ['duplicate list keys', `{"kind":"X","items":[{"metadata":{"name":"decoy"}}],"metadata":{"resourceVersion":"1","continue":"a"},"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"p"}}],"metadata":{"resourceVersion":"2"}}`],
  ['items twice, null last', `{"kind":"PodList","items":[{"metadata":{"name":"decoy"}}],"items":null}`],
  ['labels null, metadata null', listText([podText(`"name":"p","labels":null`), `{"metadata":null,"spec":{}}`, `{"spec":{}}`, `{}`])],
  ['label values not strings', listText([podText(`"name":"p","labels":{"a":1,"b":null,"c":{"d":[true]},"e":""}`)])],
  ['labels an array', listText([podText(`"name":"p","labels":[]`), podText(`"name":"q","labels":["a"]`)])],
  ['__proto__ keys', listText([podText(`"name":"p","labels":{"__proto__":"x","a":"b"},"annotations":{"__proto__":{"y":1}}`), `{"__proto__":{"metadata":{"name":"decoy"}},"metadata":{"name":"q","__proto__":{"name":"decoy"}}}`])],
  ['names not strings', listText([podText(`"name":5`), podText(`"name":true`), podText(`"name":{"a":1}`), podText(`"name":["x"]`), podText(`"name":""`), podText(`"name":null`), podText(`"name":0`), podText(`"name":false`)])],
  ['namespaces not strings', listText([podText(`"name":"a","namespace":5`), podText(`"name":"b","namespace":null`), podText(`"name":"c","namespace":""`), podText(`"name":"d","namespace":{"x":1}`), podText(`"name":"e","namespace":false`)])],
  ['resourceVersions not strings', listText([podText(`"name":"a","resourceVersion":5`), podText(`"name":"b","resourceVersion":null`), podText(`"name":"c","resourceVersion":""`), podText(`"name":"d","resourceVersion":["1"]`), podText(`"name":"e","resourceVersion":0`)])],
  ['metadata not an object', listText([`{"metadata":[]}`, `{"metadata":"x"}`, `{"metadata":5}`, `{"metadata":true}`, `{"metadata":["name"]}`])],
  ['nodeName not a string', listText([podText(`"name":"a"`, `"spec":{"nodeName":5}`), podText(`"name":"b"`, `"spec":{"nodeName":null}`), podText(`"name":"c"`, `"spec":{"nodeName":{"x":"y"}}`), podText(`"name":"d"`, `"spec":null`), podText(`"name":"e"`, `"spec":5,"status":"x"`)])],
  ['hostNetwork', listText([podText(`"name":"a"`, `"spec":{"hostNetwork":true}`), podText(`"name":"b"`, `"spec":{"hostNetwork":"true"}`), podText(`"name":"c"`, `"spec":{"hostNetwork":false}`)])],
  ['podIPs', listText([podText(`"name":"a"`, `"status":{"podIP":"1.1.1.1","podIPs":[{"ip":"2.2.2.2"},{"ip":"fd00::1"}]}`), podText(`"name":"b"`, `"status":{"podIP":"1.1.1.1","podIPs":[]}`), podText(`"name":"c"`, `"status":{"podIPs":"x"}`), podText(`"name":"d"`, `"status":{"podIPs":[null]}`), podText(`"name":"e"`, `"status":{"podIPs":[{"ip":5}],"podIP":"3.3.3.3"}`)])],
  ['numbers', listText([podText(`"name":"p","generation":12345678901234567890,"x":[-9007199254740993,9007199254740993,1.0,-0,-0.0,0e0,1e5,1E-5,1e+2,-1.5E+3,0.1,123.456e-7,1e-400,-1e-400,18446744073709551616]`, `"spec":{"terminationGracePeriodSeconds":30.0,"priority":-0}`)])],
  ['numbers beyond float64', listText([podText(`"name":"p"`, `"spec":{"x":1e400,"y":-1e999}`)])],
  ['pretty-printed', JSON.stringify(JSON.parse(podList([realPod(60), realPod(61)])), null, 2)],
  ['pretty-printed with CRLF and tabs', JSON.stringify(JSON.parse(podList([realPod(62)])), null, '\t').replaceAll('\n', '\r\n')],
  ['whitespace everywhere', ` \r\n\t{ "kind" : "PodList" ,\n"items" :\t[ { "metadata" : { "name" : "p" , "labels" : { "a" : "b" } , "resourceVersion" : "1" } , "spec" : { "nodeName" : "n" } } , {"metadata":{"name":"q","labels":{ }}} ] , "metadata" : { "resourceVersion" : "2" } }\r\n `],
  ['list keys in unusual order', `{"items":[{"metadata":{"name":"p","resourceVersion":"1"}}],"metadata":{"continue":"c","resourceVersion":"3"},"apiVersion":"v1","kind":"PodList"}`],
  ['metadata after spec and status in items', listText([`{"spec":{"nodeName":"n"},"status":{"phase":"Running"},"apiVersion":"v1","metadata":{"labels":{"a":"b"},"resourceVersion":"4","namespace":"ns","name":"p"}}`])],
  ['empty and deep values around metadata', listText([`{"a":{},"b":[],"c":[[[{"d":[{}]}]]],"metadata":{"name":"p","annotations":{"":""},"labels":{"":""}},"e":"","f":[""]}`])],
  ['long strings', listText([podText(`"name":"${'n'.repeat(70000)}","labels":{"a":"${'\\u00e9'.repeat(20000)}"},"annotations":{"big":"${'x\\"'.repeat(40000)}"}`)])],
  ['the list is not what it says', `{"kind":"Pod","apiVersion":"v1","items":[{"metadata":{"name":"p"}}]}`],
  ['the list kind is List', `{"kind":"List","apiVersion":"","items":[{"metadata":{"name":"p"}}]}`],
  ['list metadata odd', `{"kind":"PodList","metadata":{"resourceVersion":5,"continue":null},"items":[]}`],
  ['list metadata null', `{"kind":"PodList","metadata":null,"items":[{"metadata":{"name":"p"}}]}`],
  ['list apiVersion not a string', `{"kind":"PodList","apiVersion":5,"items":[{"metadata":{"name":"p"}},{"apiVersion":"v2","metadata":{"name":"q"}}]}`],
  ['item kind and apiVersion falsy', listText([`{"kind":"","apiVersion":null,"metadata":{"name":"p"}}`, `{"kind":0,"apiVersion":false,"metadata":{"name":"q"}}`, `{"kind":"","metadata":{"name":"r"}}`, `{"apiVersion":"","metadata":{"name":"s"}}`, `{"metadata":{"name":"t"},"kind":"Pod","apiVersion":""}`])],
  ['whitespace inside the items only', listText([`{ "metadata" : { "managedFields" : [ ] , "name" : "p" , "labels" : { } } }`, `{"metadata":{"name":"q","managedFields":[],"labels":{ },"resourceVersion": "5"}}`, `{"metadata":{"name":"r","labels":{"a":"b"}, "managedFields":[]}}`, `{"metadata":{"name":"s","labels":{"a":"b" }}}`, `{"metadata":{"name":"t"} }`])],
  ['items not objects, no list kind', `{"items":[1,"x",null,[],true,{"metadata":{"name":"p"}}]}`],
  ['a page that is not an object', `[{"metadata":{"name":"p"}}]`],
  ['a page that is a string', `"items"`],
  ['a page that is a number', `5`],
];

// A serializer that spells a value the many ways JSON allows: escapes of every kind (in keys too), numbers in
// other spellings, whitespace, shuffled keys, and earlier duplicates of a key (JSON.parse keeps the last).
export interface Spelling {
  /** Whitespace between tokens, escapes in keys, earlier duplicates of keys: all make the new path fall back. */
  loose: boolean;
  /** Whitespace only inside the list's items (the byte path reads up to it, then must fall back). */
  inner?: boolean;
}

/** Appends v spelled as how says; depth: 0 for the page, 2 for its items. */
export function spell(v: unknown, rnd: () => number, out: string[], how: Spelling, depth = 0): void {
  // Whitespace around a value at depth d, or inside a container at depth d - 1.
  const ws = (d = depth) => {
    if (!(how.loose || (how.inner && d >= 3)) || rnd() < 0.9) return;
    out.push([' ', '\n', '\t', '\r\n', '  ', ' \t\n'][Math.floor(rnd() * 6)]!);
  };
  ws();
  if (v === null || typeof v === 'boolean') out.push(String(v));
  else if (typeof v === 'number') out.push(spellNumber(v, rnd));
  else if (typeof v === 'string') out.push(spellString(v, rnd, 0.1));
  else if (Array.isArray(v)) {
    out.push('[');
    v.forEach((x, i) => {
      if (i > 0) out.push(',');
      spell(x, rnd, out, how, depth + 1);
    });
    ws(depth + 1);
    out.push(']');
  } else {
    const keys = Object.keys(v as object);
    if (rnd() < 0.2) keys.sort(() => rnd() - 0.5);
    out.push('{');
    let first = true;
    const member = (k: string, x: unknown) => {
      if (!first) out.push(',');
      first = false;
      ws(depth + 1);
      out.push(spellString(k, rnd, how.loose ? 0.05 : 0));
      ws(depth + 1);
      out.push(':');
      spell(x, rnd, out, how, depth + 1);
    };
    for (const k of keys) {
      if (how.loose && rnd() < 0.03) member(k, [null, 'decoy', 7, { name: 'decoy', labels: { a: 'decoy' } }, [1]][Math.floor(rnd() * 5)]);
      member(k, (v as Record<string, unknown>)[k]);
    }
    ws(depth + 1);
    out.push('}');
  }
  ws();
}

export function spellNumber(n: number, rnd: () => number): string {
  const r = rnd();
  if (r < 0.8) return String(n);
  if (Number.isInteger(n) && Math.abs(n) < 1e15) {
    if (n === 0) return ['0', '-0', '0.0', '0e5', '-0E-2'][Math.floor(r * 100) % 5]!;
    return [`${n}.0`, `${n}e0`, `${n}E+0`, `${n}0e-1`, `${n}.000e00`][Math.floor(r * 100) % 5]!;
  }
  return String(n).replace('e', 'E');
}

export function spellString(s: string, rnd: () => number, escape: number): string {
  if (escape === 0 || rnd() < 0.6) {
    // As JSON.stringify spells it, now and then with slashes escaped.
    const plain = JSON.stringify(s);
    return rnd() < 0.9 ? plain : plain.replaceAll('/', '\\/');
  }
  let out = '"';
  const hex = (c: number) => {
    const h = c.toString(16).padStart(4, '0');
    return `\\u${rnd() < 0.5 ? h : h.toUpperCase()}`;
  };
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff) {
      out += rnd() < escape * 3 + 0.05 ? hex(c) + hex(s.charCodeAt(i + 1)) : s.slice(i, i + 2);
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) out += hex(c);
    else if (c === 0x22) out += rnd() < 0.7 ? '\\"' : hex(c);
    else if (c === 0x5c) out += rnd() < 0.7 ? '\\\\' : hex(c);
    else if (c < 0x20) {
      const short = ({ 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r' } as Record<number, string>)[c];
      out += short && rnd() < 0.7 ? short : hex(c);
    } else if (c === 0x2f) out += rnd() < escape * 3 ? '\\/' : '/';
    else out += escape > 0 && rnd() < escape ? hex(c) : s[i];
  }
  return out + '"';
}

export const ALPHABET = [...'abcXYZ019-._/ "\\\'{}[]:,\u0000\u0001\u0008\u0009\u000a\u000c\u000d\u001f\u007f', 'é', 'ü', '日本', '😀', '𝄞', '\ud800', '\udc00', '\u2028', '\u2029', '\ufeff', '\uffff', '\u0080', '\\u00e9', 'fleetgate-rv-'];

export function randomString(rnd: () => number, max = 12): string {
  let s = '';
  const n = Math.floor(rnd() * max);
  for (let i = 0; i < n; i++) s += ALPHABET[Math.floor(rnd() * ALPHABET.length)];
  return s;
}

export function randomPod(rnd: () => number, index: number): Record<string, any> {
  const pod = realPod(index, (['Running', 'Pending', 'Failed'] as const)[index % 3]) as Record<string, any>;
  const m = pod.metadata;
  const r = rnd();
  if (r < 0.15) delete m.labels;
  else if (r < 0.25) m.labels = {};
  else if (r < 0.35) m.labels = null;
  else {
    for (let i = Math.floor(rnd() * 4); i > 0; i--) m.labels[randomString(rnd)] = randomString(rnd);
    if (rnd() < 0.1) m.labels[CLUSTER_LABEL] = randomString(rnd);
  }
  for (let i = Math.floor(rnd() * 3); i > 0; i--) m.annotations[randomString(rnd)] = randomString(rnd, 40);
  if (rnd() < 0.3) m.name = `${m.name}-${randomString(rnd)}`;
  if (rnd() < 0.02) m.name = rnd() < 0.5 ? '' : 5;
  if (rnd() < 0.1) delete m.namespace;
  else if (rnd() < 0.1) m.namespace = randomString(rnd);
  if (rnd() < 0.1) delete m.resourceVersion;
  if (rnd() < 0.3) m.managedFields = MANAGED_FIELDS;
  if (rnd() < 0.3) {
    delete pod.kind;
    delete pod.apiVersion;
  }
  if (rnd() < 0.1) pod.spec.hostNetwork = true;
  if (rnd() < 0.1) pod.spec.nodeName = rnd() < 0.5 ? randomString(rnd) : 7;
  if (rnd() < 0.1) pod.status.message = randomString(rnd, 60);
  return pod;
}

export function randomEvent(rnd: () => number, index: number): Record<string, any> {
  return {
    ...(rnd() < 0.5 ? { kind: 'Event', apiVersion: 'v1' } : {}),
    metadata: { name: `ev-${index}.${randomString(rnd)}`, namespace: 'default', resourceVersion: String(index), ...(rnd() < 0.5 ? { labels: { [randomString(rnd)]: randomString(rnd) } } : {}), ...(rnd() < 0.3 ? { managedFields: MANAGED_FIELDS } : {}) },
    involvedObject: { kind: 'Pod', namespace: 'default', name: randomString(rnd), uid: 'u' },
    reason: randomString(rnd),
    message: randomString(rnd, 40),
    source: rnd() < 0.5 ? { component: randomString(rnd) } : {},
    ...(rnd() < 0.3 ? { reportingComponent: randomString(rnd), series: { count: 2, lastObservedTime: '2026-01-01T00:00:00.000000Z' } } : {}),
    count: Math.floor(rnd() * 10),
    type: 'Normal',
  };
}
