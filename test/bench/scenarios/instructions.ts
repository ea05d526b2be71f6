// The cache's instructions per pod taken in, counted by valgrind's callgrind: a figure that does not move with the
// machine's speed. On the shared benchmark VM the same cold sync took anywhere from ~45 to ~70 s as the host's load
// drifted, so timed runs cannot tell apart changes worth less than ~10%; this count repeats within ~1% (two runs of
// one code: 122,091 and 122,895 a pod).
//
// How: the intake alone (test/bench/tools/intake-probe.mjs over the compiled sources, the main thread's path of a
// cold sync: every member's list pages, one page of each member in turn) at two sizes, and the difference between
// the two counts over the difference in pods, so that start-up, compilation of the code and the module's loading
// cancel out. node runs with V8's --predictable and --predictable-gc-schedule: the GC's and the compiler's work on
// the one thread, and the heap's limits fixed rather than grown as the clock and the heap's history say. Without the
// second, the full collections fell in or out of the counted stretch from run to run (two runs of one code, with the
// gateway's 64 MiB young generation: 117,956 and 123,911, full collections 3,070 and 7,109 of them; with
// --single-threaded alone, 133,641 and 137,559 for the code before). The collections are V8's fixed schedule then,
// not the gateway's (src/cache/younggen.ts), and are counted apart (byKind, by where the work ran: dumpCosts), so
// that changes compare without them:
// the scan and the gateway's JavaScript repeat to within a few instructions a pod.
// --perf-basic-prof's map of compiled code names the JavaScript functions callgrind sees only as addresses. What no
// map names is the WebAssembly JSON scan (src/api/jsonscan.ts): with the scan turned off no unnamed code is left,
// and with --no-liftoff its count is the same (the probe runs its optimized tier).
// FLEETGATE_BENCH_INSTRUCTIONS_FLAGS replaces those node flags (--perf-basic-prof is always given).

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimCluster } from '../../sim/cluster.js';
import { seedPods } from '../../sim/fleet.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PROBE = join(ROOT, 'test', 'bench', 'tools', 'intake-probe.mjs');
const PAGE = 500;
const NODE_FLAGS = (process.env.FLEETGATE_BENCH_INSTRUCTIONS_FLAGS ?? '--predictable --predictable-gc-schedule --random-seed=1').split(' ').filter(Boolean);

export interface IntakeInstructions {
  members: number;
  /** Pods per member of the two runs. */
  sizes: [number, number];
  /** The whole process's instructions in each run. */
  totals: [number, number];
  perPod: number;
  /** Per pod, by kind of code (see kindOf). */
  byKind: Record<string, number>;
  /** The functions that cost most per pod, most first. */
  top: Array<{ name: string; perPod: number }>;
}

/** Why the count cannot be taken here, or undefined when it can. */
export function instructionsUnavailable(): string | undefined {
  // The dumps are read here (dumpCosts), so valgrind is all it takes.
  if (spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).error) return 'valgrind is not installed (Debian: apt-get install valgrind)';
  return undefined;
}

export async function countIntakeInstructions(log: (m: string) => void, members = 10, sizes: [number, number] = [2000, 4000]): Promise<IntakeInstructions> {
  const missing = instructionsUnavailable();
  if (missing) throw new Error(missing);
  const work = mkdtempSync(join(tmpdir(), 'fleetgate-instructions-'));
  const maps: string[] = [];
  try {
    // The compiled tree sits in the project (dist/, as npm run build makes it), where its imports find node_modules.
    log('instructions: compiling the sources (npm run build)');
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json')], { encoding: 'utf8' });
    if (tsc.status !== 0) throw new Error(`tsc failed: ${(tsc.stdout + tsc.stderr).slice(0, 2000)}`);
    for (const n of sizes) writePages(join(work, String(n)), members, n);
    log(`instructions: the intake of ${sizes.map((n) => n * members).join(' and ')} pods under callgrind (~2 minutes)`);
    const runs = await Promise.all(
      sizes.map((n) => callgrind(join(work, `${n}.out`), [join(ROOT, 'dist'), join(work, String(n)), String(members), String(n), String(PAGE)])),
    );
    for (const r of runs) maps.push(r.map);
    const pods = (sizes[1] - sizes[0]) * members;
    const [small, big] = runs.map((r) => byFunction(r.out, r.map));
    const difference = (b: Map<string, number>, a: Map<string, number>): Map<string, number> => {
      const d = new Map<string, number>();
      for (const [name, ir] of b) d.set(name, ir - (a.get(name) ?? 0));
      for (const [name, ir] of a) if (!b.has(name)) d.set(name, -ir);
      return d;
    };
    const diff = difference(big!.fns, small!.fns);
    const byKind: Record<string, number> = {};
    for (const [kind, ir] of difference(big!.kinds, small!.kinds)) byKind[kind] = ir / pods;
    const top = [...diff].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([name, ir]) => ({ name, perPod: ir / pods }));
    const totals: [number, number] = [runs[0]!.total, runs[1]!.total];
    return { members, sizes, totals, perPod: (totals[1] - totals[0]) / pods, byKind, top };
  } finally {
    rmSync(work, { recursive: true, force: true });
    for (const m of maps) rmSync(m, { force: true });
  }
}

/** Each member's pods as the sim holds them (test/sim/fleet.ts seedPods), in list pages as a member serves them. */
function writePages(dir: string, members: number, perMember: number): void {
  mkdirSync(dir, { recursive: true });
  for (let m = 0; m < members; m++) {
    const name = `member-${String(m + 1).padStart(3, '0')}`;
    const cluster = new SimCluster(name);
    seedPods(cluster, name, perMember, 10);
    // The same bytes every run: the sim gives each pod a random uid and its creation time.
    const items = cluster.list('', 'pods').map((pod, i) => {
      pod.metadata.uid = `00000000-0000-4000-8000-${String(m).padStart(4, '0')}${String(i).padStart(8, '0')}`;
      pod.metadata.creationTimestamp = '2026-01-01T00:00:00Z';
      return pod;
    });
    const rv = String(cluster.clock.current());
    for (let from = 0; from < items.length; from += PAGE) {
      const more = from + PAGE < items.length;
      const list = { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: rv, ...(more ? { continue: String(from + PAGE) } : {}) }, items: items.slice(from, from + PAGE) };
      writeFileSync(join(dir, `${m}-${from}.json`), JSON.stringify(list));
    }
  }
}

function callgrind(out: string, args: string[]): Promise<{ out: string; map: string; total: number }> {
  return new Promise((resolve, reject) => {
    // --perf-basic-prof also writes V8's log, by default into the working directory (the repository).
    const child = spawn('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, process.execPath, ...NODE_FLAGS, '--perf-basic-prof', `--logfile=${out}.v8.log`, '--no-logfile-per-isolate', PROBE, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      // valgrind runs the program in its own process: the map node writes is named after that pid.
      const map = `/tmp/perf-${child.pid}.map`;
      const total = /Collected : (\d+)/.exec(stderr)?.[1];
      if (code !== 0 || total === undefined || !existsSync(map)) {
        reject(new Error(`the probe under callgrind failed (exit ${code}): ${(stdout + stderr).slice(-2000)}`));
        return;
      }
      resolve({ out, map, total: Number(total) });
    });
  });
}

/**
 * A dump's instructions by function and by kind. Native functions are named by symbol, JIT-compiled ones by the name
 * node's perf map gives their address.
 */
export interface DumpCosts {
  /** Each function's own instructions, by functionName. */
  fns: Map<string, number>;
  /** The same instructions by kind (see contextKinds): they add up to the fns. */
  kinds: Map<string, number>;
}

export function byFunction(out: string, mapFile: string, unnamed = UNNAMED_INTAKE): DumpCosts {
  const ranges = readFileSync(mapFile, 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .filter((p) => p.length >= 3)
    .map((p) => ({ start: parseInt(p[0]!, 16), end: parseInt(p[0]!, 16) + parseInt(p[1]!, 16), name: p.slice(2).join(' ') }))
    .sort((a, b) => a.start - b.start);
  const nameAt = (addr: number): string | undefined => {
    let lo = 0;
    let hi = ranges.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (ranges[mid]!.start <= addr) lo = mid;
      else hi = mid - 1;
    }
    const r = ranges[lo];
    return r && r.start <= addr && addr < r.end ? r.name : undefined;
  };
  return dumpCosts(readFileSync(out, 'utf8'), nameAt, unnamed);
}

/** One function of a dump: its own cost, and what each caller's calls to it cost in all (callee included). */
interface DumpFunction {
  raw: string;
  self: number;
  callers: Map<DumpFunction, number>;
}

/** A callgrind dump (its text format, positions by line, one event: Ir) as functions and the calls between them. */
export function parseDump(text: string): { total: number; functions: DumpFunction[] } {
  const objects = new Map<string, string>();
  const names = new Map<string, string>();
  const byRaw = new Map<string, DumpFunction>();
  // "(id) name" defines a compressed name, "(id)" uses it.
  const expand = (table: Map<string, string>, v: string): string => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(v);
    if (!m) return v;
    if (m[2] !== undefined) table.set(m[1]!, m[2]);
    return table.get(m[1]!) ?? v;
  };
  const fn = (name: string, object: string): DumpFunction => {
    const raw = `???:${name} [${object}]`;
    let f = byRaw.get(raw);
    if (!f) byRaw.set(raw, (f = { raw, self: 0, callers: new Map() }));
    return f;
  };
  let total = NaN;
  let ob = '???';
  let current: DumpFunction | undefined;
  let cob: string | undefined;
  let callee: DumpFunction | undefined;
  let callCost = false;
  for (const line of text.split('\n')) {
    const c = line.charCodeAt(0);
    // Cost lines: a position (a number, or +n, -n, * relative to the last), then the cost.
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) {
      const ir = Number(line.slice(line.indexOf(' ') + 1));
      if (!Number.isFinite(ir) || current === undefined) continue;
      if (callCost && callee) {
        callee.callers.set(current, (callee.callers.get(current) ?? 0) + ir);
        callCost = false;
      } else current.self += ir;
      continue;
    }
    const eq = line.indexOf('=');
    const key = eq > 0 ? line.slice(0, eq) : '';
    const value = line.slice(eq + 1);
    if (key === 'ob') ob = expand(objects, value);
    else if (key === 'fn') {
      current = fn(expand(names, value), ob);
      cob = undefined;
    } else if (key === 'cob') cob = expand(objects, value);
    else if (key === 'cfn') callee = fn(expand(names, value), cob ?? ob);
    else if (key === 'calls') {
      callCost = true;
      // cob= applies to the one call it precedes.
      cob = undefined;
    } else if (line.startsWith('summary:') || line.startsWith('totals:')) total = Number(line.slice(line.indexOf(':') + 1));
  }
  return { total, functions: [...byRaw.values()] };
}

/**
 * Where V8 collects or compiles, named by the functions that start it: the work under one of them is its kind's
 * wherever it runs (a memcpy, a hash table, a builtin), and nothing outside them is. Nested, the innermost decides:
 * a collection started while compiling counts as a collection, the sweeping a scavenge finishes as the full one's.
 */
const CONTEXT_ROOTS: Array<[RegExp, string]> = [
  [/^v8::internal::(Heap::CollectGarbage|Heap::CollectAllGarbage|Heap::Scavenge|ScavengerCollector::CollectGarbage|MinorGCJob::|ScavengeJob::)/, 'young collections'],
  [/^v8::internal::(Heap::MarkCompact|MarkCompactCollector::|IncrementalMarking::(Step|AdvanceOnAllocation|AdvanceAndFinalizeIfComplete|Start|AdvanceForTesting|Advance)|IncrementalMarkingJob::|ConcurrentMarking::|Sweeper::|PagedSpaceBase::ContributeToSweepingMain|ArrayBufferSweeper::|MemoryReducer::|Heap::FinalizeIncrementalMarking)/, 'full collections'],
  [/^v8::internal::(Runtime_Compile|Runtime_InstallBaselineCode|Runtime_NotifyDeoptimized|Compiler::|OptimizingCompileDispatcher::|BaselineBatchCompiler::|Deoptimizer::|maglev::MaglevCompiler|compiler::Pipeline)/, 'compiling and interpreting'],
];

/**
 * Each function's own cost by kind: the shares of it run under a collection or a compilation (by the calls into it:
 * a function called from both has its own cost split as its callers' calls to it cost), the rest by its name. A
 * collection's functions named as such outside one (the write barrier, allocation's slow paths) are the program's
 * work, V8's runtime. Frames a dump taken mid-run charges with the whole stretch (main, the event loop: on the
 * stack throughout) are left out.
 */
export function dumpCosts(text: string, nameAt: (addr: number) => string | undefined, unnamed = UNNAMED_INTAKE): DumpCosts {
  const { total, functions } = parseDump(text);
  const contexts = [...new Set(CONTEXT_ROOTS.map(([, k]) => k))];
  const rootOf = new Map<DumpFunction, number>();
  for (const f of functions) {
    const sym = f.raw.slice(4, f.raw.lastIndexOf(' ['));
    const name = sym.replace(/^(?:void |auto |[\w:<>, ]+? (?=v8::))/, '');
    const i = CONTEXT_ROOTS.findIndex(([re]) => re.test(name));
    if (i >= 0) rootOf.set(f, contexts.indexOf(CONTEXT_ROOTS[i]![1]));
  }
  // share.get(f)[k]: the part of f's cost run under context k; iterated to a fixed point (calls form cycles).
  const share = new Map<DumpFunction, number[]>();
  for (const f of functions) share.set(f, contexts.map((_, k) => (rootOf.get(f) === k ? 1 : 0)));
  for (let round = 0; round < 64; round++) {
    let moved = 0;
    for (const f of functions) {
      if (rootOf.has(f) || f.callers.size === 0) continue;
      let all = 0;
      const next = contexts.map(() => 0);
      for (const [caller, ir] of f.callers) {
        if (caller === f) continue;
        all += ir;
        const s = share.get(caller)!;
        for (let k = 0; k < s.length; k++) next[k] += ir * s[k]!;
      }
      if (all === 0) continue;
      const cur = share.get(f)!;
      for (let k = 0; k < cur.length; k++) {
        const v = next[k]! / all;
        moved = Math.max(moved, Math.abs(v - cur[k]!));
        cur[k] = v;
      }
    }
    if (moved < 1e-6) break;
  }
  const fns = new Map<string, number>();
  const kinds = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const f of functions) {
    if (f.self === 0 || f.self >= 0.9 * total) continue;
    const name = functionName(f.raw, nameAt, unnamed);
    add(fns, name, f.self);
    const s = share.get(f)!;
    let rest = f.self;
    for (let k = 0; k < contexts.length; k++) {
      if (s[k]! === 0) continue;
      add(kinds, contexts[k]!, f.self * s[k]!);
      rest -= f.self * s[k]!;
    }
    if (rest <= 0) continue;
    const byName = kindOf(name);
    add(kinds, byName === KIND.youngGC || byName === KIND.fullGC ? KIND.runtime : byName, rest);
  }
  return { fns, kinds };
}

/**
 * What the code no perf map names is (WebAssembly: V8 leaves it out of the map) in the process counted: in the
 * intake, the JSON scan; where the process forwards with undici, undici's HTTP/1.1 parser (llhttp) as well.
 */
export const UNNAMED_INTAKE = 'WebAssembly: the JSON scan';

/** A readable, run-independent name: no addresses, no C++ argument lists, compiled sources as their .ts path. */
export function functionName(raw: string, nameAt: (addr: number) => string | undefined, unnamed = UNNAMED_INTAKE): string {
  const addr = /^\?\?\?:0x([0-9a-f]+) \[\?\?\?\]$/.exec(raw);
  if (addr) {
    const jit = nameAt(parseInt(addr[1]!, 16));
    if (jit === undefined) return unnamed;
    // "JS:*next file:///…/dist/src/api/jsonbytes.js:317:9": * optimized, ^ baseline, ~ interpreted.
    const js = /^JS:([*^~]?)(\S*) (?:file:\/\/.*\/dist\/(.*)\.js|(node:\S+?)):\d+:\d+$/.exec(jit);
    if (js) return `${js[2] || '(anonymous)'} (${js[3] ? `${js[3]}.ts` : js[4]})`;
    return jit.replace(/^(Builtin|BytecodeHandler|Handler|Stub|RegExp):/, 'V8 $1: ');
  }
  const sym = raw.replace(/^\?\?\?:/, '').replace(/^\S+\.[Sc]:/, '');
  const obj = / \[([^\]]*)\]$/.exec(sym)?.[1] ?? '';
  let name = sym.replace(/ \[[^\]]*\]$/, '').replace(/\(anonymous namespace\)/g, '{anonymous}');
  // C++: the function's qualified name without its parameters or template arguments.
  let depth = 0;
  let cut = '';
  for (const ch of name) {
    if (ch === '<') depth++;
    else if (ch === '>') depth--;
    else if (ch === '(' && depth === 0) break;
    else if (depth === 0) cut += ch;
  }
  name = cut.replace(/^.* (?=\S+$)/, '').trim() || name;
  return obj.includes('libc') ? `${name} (libc)` : name;
}

/** Kinds of code, to say where the instructions go in a line (the keys of IntakeInstructions.byKind). */
export const KIND = {
  scan: 'the WebAssembly scan',
  gatewayJS: "the gateway's JavaScript",
  nodeJS: "Node.js's JavaScript (buffer)",
  youngGC: 'young collections',
  fullGC: 'full collections',
  compiler: 'compiling and interpreting',
  libc: 'libc (memcpy)',
  builtins: 'V8 builtins',
  runtime: 'V8 and Node.js runtime (C++)',
} as const;

export function kindOf(name: string): string {
  if (name.startsWith('WebAssembly')) return KIND.scan;
  if (/\(src\//.test(name)) return KIND.gatewayJS;
  if (/\(node:/.test(name)) return KIND.nodeJS;
  if (/Scaveng/.test(name)) return KIND.youngGC;
  if (/Mark|Sweep|Compact|RecordMigrated|Evacuat/.test(name)) return KIND.fullGC;
  if (/Heap|heap::|GC|Remembered|Slot|Pretenuring|NewSpace|GarbageCollection/.test(name)) return KIND.youngGC;
  if (/compiler::|maglev|Compil|Turbofan|Parser|Bytecode|Interpreter|baseline/i.test(name)) return KIND.compiler;
  if (/\(libc\)/.test(name)) return KIND.libc;
  if (/^Builtins_|^V8 Builtin/.test(name)) return KIND.builtins;
  return KIND.runtime;
}

/** One line for a note: the count, by kind and the costliest functions. */
export function describeInstructions(r: IntakeInstructions): string {
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const kinds = Object.entries(r.byKind)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${n(v)}`)
    .join(', ');
  const top = r.top.map((t) => `${t.name} ${n(t.perPod)}`).join(', ');
  return (
    `instructions per pod taken in (test/bench/scenarios/instructions.ts: valgrind's callgrind over the intake alone, ${n(r.sizes[0] * r.members)} and ${n(r.sizes[1] * r.members)} pods of ${r.members} members, the difference over the difference in pods; the same on any machine, within ~1% between runs of the same code; the collections are V8's predictable schedule, not the gateway's): ${n(r.perPod)}. ` +
    `By kind: ${kinds}. Costliest functions: ${top}`
  );
}
