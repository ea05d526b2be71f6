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
// not the gateway's (src/cache/younggen.ts), and are counted apart (byKind), so that changes compare without them:
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
  for (const tool of ['valgrind', 'callgrind_annotate']) {
    // callgrind_annotate --version exits 255 after printing it: only a missing program counts.
    if (spawnSync(tool, ['--version'], { encoding: 'utf8' }).error) return `${tool} is not installed (Debian: apt-get install valgrind)`;
  }
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
    const diff = new Map<string, number>();
    for (const [name, ir] of big!) diff.set(name, ir - (small!.get(name) ?? 0));
    for (const [name, ir] of small!) if (!big!.has(name)) diff.set(name, -ir);
    const byKind: Record<string, number> = {};
    for (const [name, ir] of diff) byKind[kindOf(name)] = (byKind[kindOf(name)] ?? 0) + ir / pods;
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

/** Instructions by function: native ones by symbol, JIT-compiled ones by the name node's perf map gives their address. */
export function byFunction(out: string, mapFile: string, unnamed = UNNAMED_INTAKE): Map<string, number> {
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
  const annotated = spawnSync('callgrind_annotate', ['--threshold=100', out], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (annotated.status !== 0) throw new Error(`callgrind_annotate failed: ${annotated.stderr}`);
  return functionsOfAnnotation(annotated.stdout, nameAt, unnamed);
}

/** callgrind_annotate's lines of self cost, summed by functionName. */
export function functionsOfAnnotation(text: string, nameAt: (addr: number) => string | undefined, unnamed = UNNAMED_INTAKE): Map<string, number> {
  const fns = new Map<string, number>();
  let total = -1;
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line);
    if (!m) continue;
    const ir = Number(m[1]!.replace(/,/g, ''));
    if (m[2]!.includes('PROGRAM TOTALS')) {
      total = ir;
      continue;
    }
    // A dump taken while the program runs (callgrind_control) lists the frames below the event loop (main,
    // node::Start, ...) with the main thread's whole cost: they were on the stack throughout, and are not work of their
    // own. No function's own work comes near that (the costliest, the intake's scan, is about a third).
    if (ir >= 0.9 * total) continue;
    const name = functionName(m[2]!, nameAt, unnamed);
    fns.set(name, (fns.get(name) ?? 0) + ir);
  }
  return fns;
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
