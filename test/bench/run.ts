// Runs the benchmark scenarios (test/bench/scenarios/NN-name.ts, in order) and publishes their results:
// docs/bench/results.json, docs/bench/report.md with SVG charts, and the table between the bench markers in README.md.
//
//   npm run bench                      every scenario, full scale
//   npm run bench -- --quick           reduced scale (the whole run in under 5 minutes)
//   npm run bench -- --quick 1 7       only scenarios 1 and 7; the others keep their last published result
//   npm run bench -- --no-publish 4    print the figures only; docs/ and README stay as they are (work in progress)
//   npm run bench -- --render          write the report and the README table again from results.json (with rounds.ts's notes), running nothing
//
// A scenario that throws is reported as not run (met: null) with its error; the run goes on. A string figure named
// "verdict" (e.g. "missed: 2.4 ms added vs 0.3 ms") is shown beside met/missed in the tables, not among the figures;
// a missed goal's "bound" (by how much, what bounds it) heads its section and the report's list of missed goals.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Scenario, ScenarioResult, Series } from './lib.js';
import { withRoundNotes } from './rounds.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const DOCS = join(ROOT, 'docs', 'bench');
const README = join(ROOT, 'README.md');
const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

export interface Machine {
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
}

export interface PublishedResult extends ScenarioResult {
  /** When and at which scale this result was measured (results of earlier runs are kept when only some ran). */
  ranAt: string;
  quick: boolean;
  durationS: number;
  machine: Machine;
}

export interface ResultsFile {
  generatedAt: string;
  machine: Machine;
  results: PublishedResult[];
}

function machine(): Machine {
  return {
    cores: availableParallelism(),
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
  };
}

function scenarioFiles(): Array<{ id: number; file: string }> {
  return readdirSync(join(HERE, 'scenarios'))
    .map((f) => ({ m: /^(\d+)-[\w-]+\.ts$/.exec(f), f }))
    .filter((x) => x.m)
    .map((x) => ({ id: Number(x.m![1]), file: join(HERE, 'scenarios', x.f) }))
    .sort((a, b) => a.id - b.id);
}

function fmt(v: number | string): string {
  if (typeof v === 'string') return v;
  if (!Number.isFinite(v)) return String(v);
  return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en-US') : String(v);
}

function esc(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function metCell(r: ScenarioResult): string {
  const m = r.met === true ? '✅ met' : r.met === false ? '❌ missed' : '⚠️ not judged';
  const v = r.figures.verdict;
  return v === undefined ? m : `${m}: ${esc(String(v).replace(/^(met|missed):\s*/, ''))}`;
}

function figuresCell(r: ScenarioResult, max = Infinity): string {
  const e = Object.entries(r.figures).filter(([k]) => k !== 'verdict');
  const shown = e.slice(0, max).map(([k, v]) => `${k}=${fmt(v)}`);
  if (e.length > max) shown.push(`… (${e.length - max} more in the report)`);
  return esc(shown.join(', '));
}

/** The summary table: scenario, goal, met, key figures. */
export function table(results: PublishedResult[], opts: { maxFigures?: number; link?: boolean } = {}): string {
  const head = '| # | Scenario | Goal | Result | Figures |\n|---|---|---|---|---|';
  const rows = results.map((r) => {
    const scale = r.quick ? ' (quick)' : '';
    const title = opts.link ? `[${esc(r.title)}](#${anchor(r)})` : esc(r.title);
    const cells = [String(r.id), title + scale, esc(r.goal), metCell(r), figuresCell(r, opts.maxFigures)];
    return `| ${cells.join(' | ')} |`;
  });
  return [head, ...rows].join('\n');
}

/** The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens ("5. Cold sync" -> "5-cold-sync"). */
function headingID(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{N}\s-]/gu, '').replace(/\s/g, '-');
}

function anchor(r: PublishedResult): string {
  return headingID(`${r.id}. ${r.title}`);
}

const MISSED_HEADING = 'Missed goals: by how much, and what bounds them';

/** s as a sentence: a capital first (a bound is written to follow a colon as well) and a full stop last. */
function sentence(s: string): string {
  const t = s.trim();
  return t.charAt(0).toUpperCase() + t.slice(1) + (/[.!?]$/.test(t) ? '' : '.');
}

/** What bounds a missed goal: the scenario's own statement; results published before it had one point to the notes. */
function boundOf(r: PublishedResult): string {
  return r.bound ?? 'not stated by this run (published before scenarios stated it apart); see its notes';
}

function xml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A horizontal bar chart as a small SVG string (no chart library). */
export function barChart(s: Series): string {
  const rowH = 24;
  const labelW = 170;
  const plotW = 380;
  const top = 34;
  const h = top + s.points.length * rowH + 30;
  const w = labelW + plotW + 90;
  const max = Math.max(...s.points.map((p) => (Number.isFinite(p.value) ? Math.abs(p.value) : 0)), 1e-9);
  const bars = s.points
    .map((p, i) => {
      const y = top + i * rowH;
      const v = Number.isFinite(p.value) ? Math.abs(p.value) : 0;
      const bw = Math.max(1, (v / max) * plotW);
      return (
        `<text x="${labelW - 6}" y="${y + 15}" text-anchor="end">${xml(p.label)}</text>` +
        `<rect x="${labelW}" y="${y + 3}" width="${bw.toFixed(1)}" height="${rowH - 8}" fill="${i % 2 ? '#4e79a7' : '#f28e2b'}"/>` +
        `<text x="${(labelW + bw + 4).toFixed(1)}" y="${y + 15}">${xml(fmt(p.value))}</text>`
      );
    })
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">` +
    `<rect width="100%" height="100%" fill="#fff"/>` +
    `<text x="8" y="20" font-size="14" font-weight="bold">${xml(s.title)}</text>` +
    bars +
    `<text x="${labelW}" y="${h - 8}" fill="#555">${xml(`${s.y} (by ${s.x})`)}</text>` +
    `</svg>\n`
  );
}

function report(file: ResultsFile, charts: Map<number, string[]>): string {
  const m = file.machine;
  const parts = [
    '# fleetgate benchmarks',
    '',
    `Generated ${file.generatedAt} by \`npm run bench\` (test/bench/run.ts). Machine: ${m.cores} cores (${m.cpuModel}), ` +
      `${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}. The machine is shared and noisy: every figure is measured ` +
      'against its baseline in the same run, and the ratios are what count.',
    '',
    table(file.results, { maxFigures: 8, link: true }),
    '',
  ];
  const missed = file.results.filter((r) => r.met === false);
  if (missed.length) {
    parts.push(`## ${MISSED_HEADING}`, '');
    for (const r of missed) parts.push(`- **[${r.id}. ${esc(r.title)}](#${anchor(r)})**: ${sentence(r.bound ?? `${metCell(r).replace(/^❌ /, '')}; ${boundOf(r)}`)}`);
    parts.push('');
  }
  for (const r of file.results) {
    parts.push(`## ${r.id}. ${r.title}`, '', `Goal: ${r.goal}. Result: ${metCell(r)}. Measured ${r.ranAt}${r.quick ? ' at quick scale' : ''} in ${r.durationS} s.`, '');
    if (r.met === false) parts.push(`**By how much, and what bounds it.** ${sentence(boundOf(r))}`, '');
    for (const c of charts.get(r.id) ?? []) parts.push(`![${r.title}](${c})`, '');
    parts.push('| Figure | Value |', '|---|---|', ...Object.entries(r.figures).filter(([k]) => k !== 'verdict').map(([k, v]) => `| ${esc(k)} | ${esc(fmt(v))} |`), '');
    if (r.notes.length) parts.push('Notes (the evidence, and the rounds before):', '', ...r.notes.map((n) => `- ${n}`), '');
  }
  return parts.join('\n');
}

function readme(file: ResultsFile): void {
  if (!existsSync(README)) return;
  const text = readFileSync(README, 'utf8');
  const m = file.machine;
  const block = [
    START,
    `Latest benchmark run (${file.generatedAt}; ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}; full report: [docs/bench/report.md](docs/bench/report.md); ` +
      `where a goal is missed, by how much and what bounds it: [its summary](docs/bench/report.md#${headingID(MISSED_HEADING)})):`,
    '',
    table(file.results, { maxFigures: 6 }),
    END,
  ].join('\n');
  const s = text.indexOf(START);
  const e = text.indexOf(END);
  if (s < 0 || e < s) {
    process.stderr.write('bench: README.md has no bench markers; add <!-- bench:start --> and <!-- bench:end --> where the table belongs\n');
    return;
  }
  writeFileSync(README, text.slice(0, s) + block + text.slice(e + END.length));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const dry = args.includes('--no-publish');
  const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
  if (args.includes('--render')) {
    // The published results written out again (after a change to the report's form); nothing runs.
    // A full run's rounds' notes are said again as test/bench/rounds.ts says them now.
    const again = new Map(readPublished().filter((r) => !r.quick).map((r) => [r.id, withRoundNotes(r)]));
    publish(again, machine(), false);
    log('rewrote docs/bench/report.md, its charts and the README table from docs/bench/results.json and test/bench/rounds.ts');
    return;
  }
  const only = new Set(args.filter((a) => /^\d+$/.test(a)).map(Number));
  const mach = machine();
  const byId = new Map(readPublished().map((r) => [r.id, r]));
  const mine = new Map<number, PublishedResult>();

  for (const { id, file } of scenarioFiles()) {
    if (only.size && !only.has(id)) continue;
    log(`scenario ${id}: ${file.slice(ROOT.length + 1)}${quick ? ' (quick)' : ''}`);
    const t0 = Date.now();
    let r: ScenarioResult;
    try {
      const mod = (await import(pathToFileURL(file).href)) as { run?: Scenario };
      if (typeof mod.run !== 'function') throw new Error('exports no run function');
      r = await mod.run({ quick, log });
      if (!quick) r = withRoundNotes(r);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      log(`scenario ${id} failed: ${e instanceof Error ? e.stack : msg}`);
      r = { id, title: byId.get(id)?.title ?? file.replace(/^.*\/\d+-|\.ts$/g, ''), goal: byId.get(id)?.goal ?? '', figures: {}, met: null, notes: [`did not complete: ${msg.split('\n')[0]}`] };
    }
    const durationS = Math.round((Date.now() - t0) / 100) / 10;
    const published: PublishedResult = { ...r, id, ranAt: new Date().toISOString(), quick, durationS, machine: mach };
    byId.set(id, published);
    mine.set(id, published);
    log(`scenario ${id} done in ${durationS} s: ${metCell(r)} ${JSON.stringify(r.figures)}`);
    // Published after every scenario, so a later one that takes the process down loses only itself.
    if (!dry) publish(mine, mach);
  }
  if (dry) {
    process.stdout.write(table([...mine.values()]) + '\n');
    for (const r of mine.values()) if (r.met === false) process.stdout.write(`\n${r.id}. what bounds it: ${boundOf(r)}\n`);
    return;
  }
  publish(mine, mach);
  log(`wrote docs/bench/results.json, docs/bench/report.md and the README table`);
  process.stdout.write(table(readPublished()) + '\n');
}

function readResultsFile(): ResultsFile | undefined {
  const p = join(DOCS, 'results.json');
  return existsSync(p) ? (JSON.parse(readFileSync(p, 'utf8')) as ResultsFile) : undefined;
}

function readPublished(): PublishedResult[] {
  return readResultsFile()?.results ?? [];
}

/** Overlays this run's results on what is published now (another run may have published since this one started). */
function publish(mine: Map<number, PublishedResult>, mach: Machine, newRun = true): void {
  const resultsPath = join(DOCS, 'results.json');
  const published = readResultsFile();
  const byId = new Map((published?.results ?? []).map((r) => [r.id, r]));
  for (const [id, r] of mine) byId.set(id, r);
  const results = [...byId.values()].sort((a, b) => a.id - b.id);
  // Rendered again without a run, the file keeps when and where it was generated.
  const before = newRun ? undefined : published;
  const file: ResultsFile = { generatedAt: before?.generatedAt ?? new Date().toISOString(), machine: before?.machine ?? mach, results };
  mkdirSync(DOCS, { recursive: true });
  writeFileSync(resultsPath, JSON.stringify(file, null, 2) + '\n');
  const charts = new Map<number, string[]>();
  for (const r of results) {
    const names: string[] = [];
    (r.series ?? []).forEach((s, i) => {
      const name = `scenario-${String(r.id).padStart(2, '0')}-${i + 1}.svg`;
      writeFileSync(join(DOCS, name), barChart(s));
      names.push(name);
    });
    charts.set(r.id, names);
  }
  writeFileSync(join(DOCS, 'report.md'), report(file, charts));
  readme(file);
}

// The fleet-scale scenarios hold millions of objects: run in a child with a heap sized for them (V8's default limit
// is about 4 GiB), unless this already is that child or the caller chose a limit.
const HEAP_MB = 16_384;
if (!process.env.FLEETGATE_BENCH_CHILD && !/max-old-space-size/.test(`${process.env.NODE_OPTIONS ?? ''} ${process.execArgv.join(' ')}`)) {
  const r = spawnSync(process.execPath, [...process.execArgv, `--max-old-space-size=${HEAP_MB}`, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, FLEETGATE_BENCH_CHILD: '1' },
  });
  process.exit(r.status ?? 1);
}

main().then(
  // Scenarios close what they start; exit anyway so a stray handle cannot keep the run alive.
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench: ${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(1);
  },
);
