// What every benchmark scenario reports, and the small measuring helpers they share. Benchmarks print figures and
// ratios against a baseline measured in the same run; they are not pass/fail tests, but each says whether its goal
// was met and, where not, by how much and what bounds it.

import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

export interface Series {
  /** Chart title and axis labels. */
  title: string;
  x: string;
  y: string;
  points: Array<{ label: string; value: number }>;
}

export interface ScenarioResult {
  id: number;
  title: string;
  /** The goal as the issue states it. */
  goal: string;
  /** Figures by name (units in the name: "p50_ms", "throughput_rps", "ratio_to_direct"). */
  figures: Record<string, number | string>;
  /** true/false when the goal could be judged; null when the scenario could not run at the asked scale. */
  met: boolean | null;
  /**
   * A missed goal: by how much, and what bounds it, in a few sentences from this run's figures and the latest
   * profile. The report puts these together under the summary table; the notes hold the evidence.
   */
  bound?: string;
  /** The evidence for the bound (profiles, what was tried), the scale actually run, anything a reader must know. */
  notes: string[];
  /** Which of the notes are the rounds' notes of test/bench/rounds.ts (put in by withRoundNotes), not the scenario's. */
  roundNotes?: string[];
  series?: Series[];
}

export interface ScenarioOptions {
  quick: boolean;
  /** Log progress lines to stderr. */
  log: (msg: string) => void;
}

export type Scenario = (o: ScenarioOptions) => Promise<ScenarioResult>;

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summarize(samplesMs: number[]): { p50: number; p90: number; p99: number; max: number; n: number } {
  const s = [...samplesMs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN, n: s.length };
}

export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/**
 * CPU time of this process's main thread so far, in ns (Linux schedstat: time on a CPU, not wall time, so waiting
 * for a core on this shared machine does not count); NaN elsewhere.
 */
export function mainThreadCpuNs(): number {
  return mainThreadSched().runNs;
}

/**
 * This process's main thread so far (Linux schedstat), in ns: time on a CPU, and time runnable but waiting for one.
 * The second is what the other busy threads on a machine's cores cost the thread; NaN elsewhere.
 */
export function mainThreadSched(): { runNs: number; waitNs: number } {
  try {
    const [run, wait] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'latin1').split(' ');
    return { runNs: Number(run), waitNs: Number(wait) };
  } catch {
    return { runNs: NaN, waitNs: NaN };
  }
}

/** First writes to fresh pages (minor faults) taken by the main thread alone so far (Linux; NaN elsewhere). */
export function mainThreadMinorFaults(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'latin1');
    // After the command's closing parenthesis: state is field 3, minflt field 10.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[7]);
  } catch {
    return NaN;
  }
}

/**
 * The machine's CPU time so far (Linux /proc/stat, all CPUs, in clock ticks): in all, stolen, i.e. time the host
 * ran something else while this VM's CPUs had work, and idle (NaN elsewhere). Over a window, stolen / all is the
 * share of the machine's cores the host took away (on this shared VM it swings from run to run), and idle / all
 * says whether the cores were what bounded the window.
 */
export function machineCpuTicks(): { total: number; steal: number; idle: number } {
  try {
    const f = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    return { total: f.slice(0, 8).reduce((a, b) => a + b, 0), steal: f[7] ?? NaN, idle: (f[3] ?? NaN) + (f[4] ?? NaN) };
  } catch {
    return { total: NaN, steal: NaN, idle: NaN };
  }
}

/** The share of the machine's CPU time left idle between two readings of machineCpuTicks. */
export function idleShare(a: { total: number; idle: number }, b: { total: number; idle: number }): number {
  return (b.idle - a.idle) / (b.total - a.total);
}

/** The share of the machine's CPU time the host stole between two readings of machineCpuTicks. */
export function stealShare(a: { total: number; steal: number }, b: { total: number; steal: number }): number {
  return (b.steal - a.steal) / (b.total - a.total);
}

/**
 * Starts sampling this thread's JS heap allocations, garbage included (what makes young-generation collections);
 * the function returned stops and writes the profile to file (a .heapprofile for Chrome DevTools), if one is given.
 */
export async function startHeapSampling(): Promise<(file?: string) => Promise<void>> {
  const session = new Session();
  const post = (method: string, params?: object) =>
    new Promise<any>((resolve, reject) => session.post(method, params ?? {}, (err, r) => (err ? reject(err) : resolve(r))));
  session.connect();
  await post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  return async (file) => {
    const { profile } = await post('HeapProfiler.stopSampling');
    session.disconnect();
    if (file) writeFileSync(file, JSON.stringify(profile));
  };
}

/** The process's monotonic clock in ms, the same in every thread (a tagged load's spans, and the server's side of them). */
export function hrtimeMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
