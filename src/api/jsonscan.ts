// A member's pods checked as JSON by a WebAssembly pass, which also records where each string and container ends.
// The intake (src/cache/intake.ts: list pages, and each watch event's pod) then walks only the members it reads
// (metadata, spec and status fields) and steps over everything else in one lookup, where the byte scanner
// (jsonbytes.ts) would check every byte of it in JavaScript: over a page of 500 generated pods the check runs at ~2
// GB/s against ~0.5-0.7 GB/s, copy into the module's memory included (test/bench/scenarios/05-cold-sync.ts notes).
//
// The grammar is the one jsonbytes.ts checks (what JSON.parse accepts; UTF-8 is the caller's, buffer.isUtf8), and it
// reports the same two things the intake must know of a page: whitespace between tokens and numbers beyond a double.
// The module is compiled from its text below (wabt) once, when the gateway starts or the first page asks; until
// then, and for bytes it does not take (over 16 MiB, nested too deep), the byte scanner does the whole job, so
// nothing depends on it.

import { createRequire } from 'node:module';

/**
 * Bytes b[base, to) copied into the module's memory, whose values are checked one at a time (value), each while its
 * reader is about to walk it: the index of a whole page, read afterwards, cost a cache miss per lookup. Valid until
 * the next mirrorJSON.
 */
export interface JSONMirror {
  /** Where the copy starts in b: b's byte i is the copy's byte i - base. */
  base: number;
  /**
   * For a string or container starting at b's byte i, in a value checked: ends[i - base] & 0x7fffffff is the index
   * after it in the copy (+ base in b), and for a string ends[i - base] < 0 when it holds an escape. Other entries are
   * stale.
   */
  ends: Int32Array;
  /**
   * Checks the JSON value that starts exactly at b's byte i: the index after it in b; -1: not JSON (or it runs past
   * the copy's end); -2: nested too deep for the scan.
   */
  value(i: number): number;
  /** Whitespace between tokens was met in a value checked since the mirror was made. */
  spaced(): boolean;
  /** A number beyond a double was, as jsonbytes.ts hugeNumbers (integer digits plus exponent 300 or more). */
  huge(): boolean;
}

/** Pages up to this size are scanned: the module's memory (5 times the largest page, to the next power of two up to this) stays while the process lives. */
export const MAX_SCANNED_BYTES = 16 * 1024 * 1024;
/** Containers open at once; deeper input is left to the byte scanner, whose stack grows. */
const STACK_DEPTH = 4096;
/** The scan reads up to 16 bytes at a time and stops at a zero byte (a control character) past the end. */
const PADDING = 16;

// What is used of WebAssembly: the project's libs (ES2023, node) do not declare it.
declare const WebAssembly: {
  Module: new (binary: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
};

interface Scanner {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  value(start: number, endsBase: number, stackBase: number, stackDepth: number): number;
  spaced: { value: number };
  huge: { value: number };
}

let scanner: Scanner | undefined;
let loading: Promise<Scanner | undefined> | undefined;
let enabled = true;
/** Why the module could not be made, if it could not (then the byte scanner does everything). */
export let jsonScanError: string | undefined;

/** The module, compiled once; resolves undefined when it cannot be (the byte scanner then does the job). */
export function loadJSONScan(): Promise<Scanner | undefined> {
  loading ??= compile().then(
    (s) => (scanner = s),
    (e: unknown) => {
      jsonScanError = e instanceof Error ? e.message : String(e);
      return undefined;
    },
  );
  return loading;
}

async function compile(): Promise<Scanner> {
  // wabt is CommonJS: required rather than imported, so that it is loaded only when a page first asks.
  const wabt = await (createRequire(import.meta.url)('wabt') as () => Promise<{ parseWat(name: string, text: string, features: { simd: boolean }): { toBinary(o: object): { buffer: Uint8Array }; destroy(): void } }>)();
  const parsed = wabt.parseWat('jsonscan.wat', SCAN_WAT, { simd: true });
  try {
    const { buffer } = parsed.toBinary({});
    return new WebAssembly.Instance(new WebAssembly.Module(buffer), {}).exports as Scanner;
  } finally {
    parsed.destroy();
  }
}

/** Tests and benchmarks: whether pages are scanned by the module (true) or left to the byte scanner. */
export function setJSONScan(on: boolean): void {
  enabled = on;
}

// The module's memory: the copy at [0, capacity), ends[] at capacity (4 bytes a byte of the copy), the stack after.
// capacity only grows, in powers of two, so the views below are made again only then: a watch event's pod is
// mirrored on its own, thousands a second, each of another length.
let capacity = 0;
let bytes = new Uint8Array(0);
const mirror: JSONMirror = {
  base: 0,
  ends: new Int32Array(0),
  value(i) {
    const end = scanner!.value(i - this.base, capacity, 5 * capacity, STACK_DEPTH);
    return end >= 0 ? end + this.base : end;
  },
  spaced: () => scanner!.spaced.value !== 0,
  huge: () => scanner!.huge.value !== 0,
};

/**
 * b[from, to) in the module's memory (see JSONMirror); undefined when the module is not ready or does not take the
 * bytes. Nothing past to is read: a value running past it is not JSON here.
 */
export function mirrorJSON(b: Uint8Array, from = 0, to = b.length): JSONMirror | undefined {
  if (!enabled) return undefined;
  const s = scanner;
  if (s === undefined) {
    void loadJSONScan();
    return undefined;
  }
  const length = to - from;
  if (length > MAX_SCANNED_BYTES) return undefined;
  if (length + PADDING > capacity || bytes.buffer !== s.memory.buffer) {
    while (capacity < length + PADDING) capacity = Math.min(Math.max(2 * capacity, 64 * 1024), MAX_SCANNED_BYTES + PADDING);
    const need = 5 * capacity + 4 * STACK_DEPTH;
    const have = s.memory.buffer.byteLength;
    if (have < need) s.memory.grow(Math.ceil((need - have) / 65536));
    // Growing detaches the views made before.
    bytes = new Uint8Array(s.memory.buffer, 0, capacity);
    mirror.ends = new Int32Array(s.memory.buffer, capacity, capacity);
  }
  bytes.set(b.subarray(from, to), 0);
  bytes.fill(0, length, length + PADDING);
  s.spaced.value = 0;
  s.huge.value = 0;
  mirror.base = from;
  return mirror;
}

/**
 * The string whose opening quote is at $p: $p is left after its closing quote, and its end recorded in ends[] (the
 * top bit set when it holds an escape); else errpos is set and the scan fails. Sixteen bytes a step while none is a
 * quote, a backslash or a control character. Written out where it is used (labels suffixed with id): a call per
 * string was a third of the scan's time, and V8 does not inline WebAssembly functions by default.
 */
function scanString(id: string): string {
  return `(local.set $sq (local.get $p))
    (local.set $esc (i32.const 0))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (block $str_end_${id} (loop $str_${id}
      (local.set $v (v128.load align=1 (local.get $p)))
      (local.set $m (i8x16.bitmask
        (v128.or
          (v128.or (i8x16.eq (local.get $v) (i8x16.splat (i32.const 0x22))) (i8x16.eq (local.get $v) (i8x16.splat (i32.const 0x5c))))
          (i8x16.lt_u (local.get $v) (i8x16.splat (i32.const 0x20))))))
      (if (i32.eqz (local.get $m)) (then
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $str_${id})))
      (local.set $p (i32.add (local.get $p) (i32.ctz (local.get $m))))
      (local.set $c (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 0x22)) (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (i32.store (i32.add (local.get $endsBase) (i32.shl (local.get $sq) (i32.const 2)))
          (i32.or (local.get $p) (i32.shl (local.get $esc) (i32.const 31))))
        (br $str_end_${id})))
      (if (i32.eq (local.get $c) (i32.const 0x5c)) (then
        (local.set $esc (i32.const 1))
        (local.set $e (i32.load8_u offset=1 (local.get $p)))
        (if (i32.eq (local.get $e) (i32.const 0x75)) (then
          (if (i32.eqz (i32.and (i32.and (call $hex (i32.load8_u offset=2 (local.get $p))) (call $hex (i32.load8_u offset=3 (local.get $p))))
                                (i32.and (call $hex (i32.load8_u offset=4 (local.get $p))) (call $hex (i32.load8_u offset=5 (local.get $p))))))
            (then (global.set $errpos (i32.add (local.get $p) (i32.const 2))) (br $fail)))
          (local.set $p (i32.add (local.get $p) (i32.const 6)))
          (br $str_${id})))
        (if (i32.or
              (i32.or (i32.or (i32.eq (local.get $e) (i32.const 0x22)) (i32.eq (local.get $e) (i32.const 0x5c)))
                      (i32.or (i32.eq (local.get $e) (i32.const 0x2f)) (i32.eq (local.get $e) (i32.const 0x62))))
              (i32.or (i32.or (i32.eq (local.get $e) (i32.const 0x66)) (i32.eq (local.get $e) (i32.const 0x6e)))
                      (i32.or (i32.eq (local.get $e) (i32.const 0x72)) (i32.eq (local.get $e) (i32.const 0x74)))))
          (then (local.set $p (i32.add (local.get $p) (i32.const 2))) (br $str_${id})))
        (global.set $errpos (i32.add (local.get $p) (i32.const 1)))
        (br $fail)))
      ;; a control character, or the padding past the end
      (global.set $errpos (local.get $p))
      (br $fail)))`;
}

/** After an object's opening brace or a comma in it (and whitespace): a key, its colon and the whitespace before its value. */
function scanKey(id: string): string {
  return `(if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x22)) (then (global.set $errpos (local.get $p)) (br $fail)))
    ${scanString(id)}
    (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x3a)) (then
      (local.set $p (call $ws (local.get $p)))
      (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x3a)) (then (global.set $errpos (local.get $p)) (br $fail)))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (if (i32.le_u (i32.load8_u (local.get $p)) (i32.const 0x20)) (then (local.set $p (call $ws (local.get $p)))))`;
}

// The scan. Input at [0, length) with PADDING zero bytes after it; ends[] at endsBase; the open containers' start
// indexes at stackBase. A container's kind is read back from its opening byte; its closing byte is that + 2.
// value(start) returns the index after the value at start, -1 when it is not JSON (errpos says where) or -2 when it
// is deeper than stackDepth.
const SCAN_WAT = `
(module
  (memory (export "memory") 1)
  (global $spaced (export "spaced") (mut i32) (i32.const 0))
  (global $huge (export "huge") (mut i32) (i32.const 0))
  (global $errpos (export "errpos") (mut i32) (i32.const 0))

  (func $isSpace (param $c i32) (result i32)
    (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x0a)))
            (i32.or (i32.eq (local.get $c) (i32.const 0x0d)) (i32.eq (local.get $c) (i32.const 0x09)))))

  ;; the first index at or after p that is not whitespace; sets spaced when that is not p
  (func $ws (param $p i32) (result i32)
    (local $s i32) (local $c i32)
    (local.set $s (local.get $p))
    (block $done (loop $l
      (local.set $c (i32.load8_u (local.get $p)))
      (br_if $done (i32.eqz
        (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x0a)))
                (i32.or (i32.eq (local.get $c) (i32.const 0x0d)) (i32.eq (local.get $c) (i32.const 0x09))))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $l)))
    (if (i32.ne (local.get $p) (local.get $s)) (then (global.set $spaced (i32.const 1))))
    (local.get $p))

  (func $digit (param $c i32) (result i32)
    (i32.lt_u (i32.sub (local.get $c) (i32.const 0x30)) (i32.const 10)))

  (func $hex (param $c i32) (result i32)
    (i32.or (call $digit (local.get $c))
            (i32.lt_u (i32.sub (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x61)) (i32.const 6))))

  (func $digits (param $p i32) (result i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (call $digit (i32.load8_u (local.get $p)))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $l)))
    (local.get $p))

  ;; the number at p (a minus or a digit): the index after it, or -1. Sets huge as jsonbytes.ts skipNumber does.
  (func $num (param $p i32) (result i32)
    (local $int i32) (local $order i32) (local $c i32) (local $neg i32) (local $exp i32)
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2d)) (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
    (local.set $int (local.get $p))
    (local.set $c (i32.load8_u (local.get $p)))
    (if (i32.eq (local.get $c) (i32.const 0x30))
      (then (local.set $p (i32.add (local.get $p) (i32.const 1))))
      (else
        (if (i32.lt_u (i32.sub (local.get $c) (i32.const 0x31)) (i32.const 9))
          (then (local.set $p (call $digits (i32.add (local.get $p) (i32.const 1)))))
          (else (global.set $errpos (local.get $p)) (return (i32.const -1))))))
    (local.set $order (i32.sub (local.get $p) (local.get $int)))
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2e)) (then
      (if (i32.eqz (call $digit (i32.load8_u offset=1 (local.get $p))))
        (then (global.set $errpos (i32.add (local.get $p) (i32.const 1))) (return (i32.const -1))))
      (local.set $p (call $digits (i32.add (local.get $p) (i32.const 1))))))
    (if (i32.eq (i32.or (i32.load8_u (local.get $p)) (i32.const 0x20)) (i32.const 0x65)) (then
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (local.set $c (i32.load8_u (local.get $p)))
      (local.set $neg (i32.eq (local.get $c) (i32.const 0x2d)))
      (if (i32.or (local.get $neg) (i32.eq (local.get $c) (i32.const 0x2b))) (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
      (if (i32.eqz (call $digit (i32.load8_u (local.get $p))))
        (then (global.set $errpos (local.get $p)) (return (i32.const -1))))
      (block $d (loop $l
        (local.set $c (i32.load8_u (local.get $p)))
        (br_if $d (i32.eqz (call $digit (local.get $c))))
        (if (i32.lt_u (local.get $exp) (i32.const 1000000))
          (then (local.set $exp (i32.add (i32.mul (local.get $exp) (i32.const 10)) (i32.sub (local.get $c) (i32.const 0x30))))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $l)))
      (if (i32.eqz (local.get $neg)) (then (local.set $order (i32.add (local.get $order) (local.get $exp)))))))
    (if (i32.ge_s (local.get $order) (i32.const 300)) (then (global.set $huge (i32.const 1))))
    (local.get $p))

  (func (export "value") (param $start i32) (param $endsBase i32) (param $stackBase i32) (param $stackDepth i32) (result i32)
    (local $p i32) (local $c i32) (local $q i32) (local $depth i32) (local $d i32) (local $open i32)
    (local $sq i32) (local $v v128) (local $m i32) (local $esc i32) (local $e i32)
    (local.set $p (local.get $start))
    (block $fail
      (block $done
        (loop $value
          ;; a value at p
          (local.set $c (i32.load8_u (local.get $p)))
          (block $after
            (if (i32.eq (local.get $c) (i32.const 0x22)) (then
              ${scanString('v')}
              (br $after)))
            ;; { or [
            (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7b)) (then
              (local.set $q (local.get $p))
              (local.set $p (i32.add (local.get $p) (i32.const 1)))
              (if (i32.le_u (i32.load8_u (local.get $p)) (i32.const 0x20)) (then (local.set $p (call $ws (local.get $p)))))
              (if (i32.eq (i32.load8_u (local.get $p)) (i32.add (local.get $c) (i32.const 2))) (then
                (local.set $p (i32.add (local.get $p) (i32.const 1)))
                (i32.store (i32.add (local.get $endsBase) (i32.shl (local.get $q) (i32.const 2))) (local.get $p))
                (br $after)))
              (if (i32.eq (local.get $depth) (local.get $stackDepth)) (then (return (i32.const -2))))
              (i32.store (i32.add (local.get $stackBase) (i32.shl (local.get $depth) (i32.const 2))) (local.get $q))
              (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
              (if (i32.eq (local.get $c) (i32.const 0x7b)) (then
                ${scanKey('o')}))
              (br $value)))
            (if (i32.or (i32.eq (local.get $c) (i32.const 0x2d)) (call $digit (local.get $c))) (then
              (local.set $p (call $num (local.get $p)))
              (br_if $fail (i32.lt_s (local.get $p) (i32.const 0)))
              (br $after)))
            ;; true, null and false, as little-endian words
            (if (i32.eq (local.get $c) (i32.const 0x74)) (then
              (if (i32.ne (i32.load align=1 (local.get $p)) (i32.const 0x65757274)) (then (global.set $errpos (local.get $p)) (br $fail)))
              (local.set $p (i32.add (local.get $p) (i32.const 4)))
              (br $after)))
            (if (i32.eq (local.get $c) (i32.const 0x6e)) (then
              (if (i32.ne (i32.load align=1 (local.get $p)) (i32.const 0x6c6c756e)) (then (global.set $errpos (local.get $p)) (br $fail)))
              (local.set $p (i32.add (local.get $p) (i32.const 4)))
              (br $after)))
            (if (i32.eq (local.get $c) (i32.const 0x66)) (then
              (if (i32.ne (i32.load offset=1 align=1 (local.get $p)) (i32.const 0x65736c61)) (then (global.set $errpos (local.get $p)) (br $fail)))
              (local.set $p (i32.add (local.get $p) (i32.const 5)))
              (br $after)))
            (global.set $errpos (local.get $p))
            (br $fail))
          ;; after a value: the next one in its container, or the containers it closes
          (loop $close
            (br_if $done (i32.eqz (local.get $depth)))
            (local.set $d (i32.load8_u (local.get $p)))
            (if (i32.le_u (local.get $d) (i32.const 0x20)) (then
              (local.set $p (call $ws (local.get $p)))
              (local.set $d (i32.load8_u (local.get $p)))))
            (local.set $q (i32.load (i32.add (local.get $stackBase) (i32.shl (i32.sub (local.get $depth) (i32.const 1)) (i32.const 2)))))
            (local.set $open (i32.load8_u (local.get $q)))
            (if (i32.eq (local.get $d) (i32.const 0x2c)) (then
              (local.set $p (i32.add (local.get $p) (i32.const 1)))
              (if (i32.le_u (i32.load8_u (local.get $p)) (i32.const 0x20)) (then (local.set $p (call $ws (local.get $p)))))
              (if (i32.eq (local.get $open) (i32.const 0x7b)) (then
                ${scanKey('c')}))
              (br $value)))
            (if (i32.eq (local.get $d) (i32.add (local.get $open) (i32.const 2))) (then
              (local.set $p (i32.add (local.get $p) (i32.const 1)))
              (i32.store (i32.add (local.get $endsBase) (i32.shl (local.get $q) (i32.const 2))) (local.get $p))
              (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
              (br $close)))
            (global.set $errpos (local.get $p))
            (br $fail))))
      (return (local.get $p)))
    (i32.const -1))
)
`;
