// The cache's intake of members' list pages, alone in a process, for counting its instructions under callgrind
// (test/bench/scenarios/instructions.ts runs it). Plain JavaScript over the compiled sources, so that nothing but
// node and the intake runs: no TypeScript loader, no sockets.
//
// usage: node intake-probe.mjs <compiled tree> <pages dir> <members> <pods per member> [page size]
// Reads <pages dir>/<member>-<first pod>.json, list pages as a member serves them, and takes every member's first
// list in as at a cold sync: one page of each member in turn (the main thread's path: encodePage, then addEncoded).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [tree, dir, membersArg, perMemberArg, pageArg] = process.argv.slice(2);
const members = Number(membersArg);
const perMember = Number(perMemberArg);
const page = Number(pageArg ?? 500);
const load = (p) => import(pathToFileURL(join(tree, p)).href);
const { MergedCache } = await load('src/cache/merged.js');
const { loadJSONScan, jsonScanError } = await load('src/api/jsonscan.js');
if ((await loadJSONScan()) === undefined) throw new Error(`the WebAssembly scan did not load: ${jsonScanError}`);

const pages = [];
for (let m = 0; m < members; m++) {
  const own = [];
  for (let from = 0; from < perMember; from += page) own.push(readFileSync(join(dir, `${m}-${from}.json`)));
  pages.push(own);
}
const cache = new MergedCache({ instanceID: 'probe', windowSize: 1000, dropManagedFields: false, rvBase: 1 << 30 });
const sinks = pages.map((_, m) => cache.sink(`member-${m + 1}`, 'pods'));
const lists = sinks.map((s) => s.startList());
const t0 = performance.now();
for (let k = 0; k < perMember / page; k++) for (let m = 0; m < members; m++) lists[m].addEncoded(sinks[m].encodePage(pages[m][k]));
for (let m = 0; m < members; m++) lists[m].end(String(1000 + perMember));
const held = cache.pods.size;
if (held !== members * perMember) throw new Error(`the cache holds ${held} pods, not ${members * perMember}`);
console.log(JSON.stringify({ pods: held, ms: performance.now() - t0 }));
