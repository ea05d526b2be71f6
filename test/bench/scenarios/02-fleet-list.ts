// Scenario 2: the fleet LIST from the merged cache. A full JSON list, kubectl-style Table pages (limit=500) and a
// full Table, each timed to the last byte, against the ceiling measured in the same run: the same JSON bytes,
// already in memory, written by a plain node HTTPS server to the same kind of loopback socket.

import { closeSync, openSync, writeSync } from 'node:fs';
import { rm, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { round, summarize, type Scenario } from '../lib.js';
import { scaleFor, scaleNote, startScale, TABLE_ACCEPT, timedGet } from './scale.js';

const MB = 1024 * 1024;
/** Full Tables of the fleet: ~25 s each at 1M pods. */
const TABLE_REPS = 3;

export const run: Scenario = async ({ quick, log }) => {
  const { members, podsPerMember } = scaleFor(quick);
  const fleet = await startScale({ members, podsPerMember, log });
  const dir = await mkdtemp(join(tmpdir(), 'fleetgate-bench-'));
  try {
    const ep = fleet.gateway;
    const reps = quick ? 3 : 5;
    // Warm-up: first requests pay TLS set-up and JIT.
    await timedGet(ep, '/api/v1/pods?limit=500');

    const json: number[] = [];
    // The list once, to a file for the ceiling, its items counted as it streams: at 1M pods it is ~5 GB, more than
    // one Buffer holds.
    const file = join(dir, 'list.json');
    const fd = openSync(file, 'w');
    const KIND = Buffer.from('"kind":"Pod"');
    const count = (b: Buffer) => {
      let n = 0;
      for (let i = b.indexOf(KIND); i >= 0; i = b.indexOf(KIND, i + KIND.length)) n++;
      return n;
    };
    let items = 0;
    let carry = Buffer.alloc(0);
    const { bytes } = await timedGet(ep, '/api/v1/pods', {
      onData(c) {
        writeSync(fd, c);
        items += count(c);
        // A match across the boundary: the last bytes before this chunk and the first of it (shorter than a match,
        // neither side holds one of its own).
        if (carry.length > 0) items += count(Buffer.concat([carry, c.subarray(0, KIND.length - 1)]));
        // (A chunk shorter than that keeps what came before it too.)
        const last = c.length >= KIND.length - 1 ? c : Buffer.concat([carry, c]);
        carry = Buffer.from(last.subarray(Math.max(0, last.length - (KIND.length - 1))));
      },
    });
    closeSync(fd);

    // The list and its ceiling in alternation, so that both see the same stretches of this shared machine (at 1M
    // pods one run takes 5-10 s, and in runs one after the other the machine's speed moved more than the goal's
    // margin).
    const ceilingEp = await fleet.sim({ op: 'ceiling', file });
    const ceiling: number[] = [];
    await timedGet(ceilingEp, '/');
    for (let i = 0; i < reps; i++) {
      json.push((await timedGet(ep, '/api/v1/pods')).ms);
      ceiling.push((await timedGet(ceilingEp, '/')).ms);
    }
    log(`02: JSON list ${items} pods, ${round(bytes / MB)} MB, ${json.map((x) => round(x)).join(' / ')} ms`);
    log(`02: ceiling ${ceiling.map((x) => round(x)).join(' / ')} ms`);

    // kubectl get pods -A: Table pages of 500, each request after the previous one's last byte.
    const pagesRun = async () => {
      const t0 = performance.now();
      let cont: string | undefined;
      let pages = 0;
      let b = 0;
      do {
        const r = await timedGet(ep, `/api/v1/pods?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, { accept: TABLE_ACCEPT });
        cont = r.continue;
        pages++;
        b += r.bytes;
      } while (cont);
      return { ms: performance.now() - t0, pages, bytes: b };
    };
    const paged = await pagesRun();
    const pageMs = paged.ms / paged.pages;
    log(`02: table pages ${paged.pages} in ${round(paged.ms)} ms`);
    const table: number[] = [];
    let tableBytes = 0;
    for (let i = 0; i < TABLE_REPS; i++) {
      const r = await timedGet(ep, '/api/v1/pods', { accept: TABLE_ACCEPT });
      table.push(r.ms);
      tableBytes = r.bytes;
    }
    const tenK: number[] = [];
    let tenKBytes = 0;
    for (let i = 0; i < (quick ? 10 : 20); i++) {
      const r = await timedGet(ep, '/api/v1/pods?limit=10000');
      tenK.push(r.ms);
      tenKBytes = r.bytes;
    }

    const jsonMs = summarize(json).p50;
    const ceilMs = summarize(ceiling).p50;
    const jsonMBs = bytes / MB / (jsonMs / 1000);
    const ceilMBs = bytes / MB / (ceilMs / 1000);
    const ratio = jsonMBs / ceilMBs;
    const tenKp50 = summarize(tenK).p50;
    const met = ratio >= 0.7 && tenKp50 < 100;
    const notes = [scaleNote(members, podsPerMember), `times are medians: of ${reps} runs of the JSON list and its ceiling, alternating, and of ${TABLE_REPS} full Tables; the client is the benchmark process (node https, HTTP/1.1 over TLS), as is the ceiling's`];
    if (!quick) {
      notes.push(
        "in the second round of 2026-11-28 the gateway and the benchmark's own process (the client here) run with V8's young generation at 64 MiB a semi-space, as the image and the chart now start node (src/cache/younggen.ts). The run published then was on a slow stretch of this VM: the ceiling itself moved 382 MB/s, where other runs at 1M moved 736-940 MB/s (774 and 736 later that day, 940 in the run published before) and runs at quick scale that day 607-903 MB/s. To see whether the client's larger young generation slowed its reads, alternating runs with the benchmark's process with and without the flag (node --import tsx test/bench/run.ts --no-publish 2): at 1M, one pair, the ceiling 736 MB/s with it against 774 without, the JSON list at 88% and 67% of it, the 10k-pod list p50 102 and 86 ms; at quick scale, three pairs, the ceiling 895, 607 and 894 MB/s against 903, 736 and 806, the 10k-pod list p50 64, 92 and 64 ms against 74, 89 and 90 ms: no difference beside the spread",
      );
      notes.push(
        'in the third round of 2026-11-27, the first runs at 1M (this scenario ran at quick scale before): 86.8% of the ceiling and 69.2% with three list runs followed by three ceiling runs (the list 6.7-9.6 s, the ceiling 5.3-6.2 s: the machine sped up between them); since then they alternate, five of each',
      );
    }
    if (ratio < 0.7) notes.push(`JSON list at ${round(ratio * 100, 1)}% of the ceiling, ${round((0.7 - ratio) * 100, 1)} points short`);
    const tenKCeilingMs = tenKBytes / MB / ceilMBs * 1000;
    if (tenKp50 >= 100) {
      notes.push(
        `10k-pod list (limit=10000, ${round(tenKBytes / MB)} MB) p50 ${round(tenKp50)} ms, ${round(tenKp50 - 100)} ms over the goal; the loopback ceiling measured in this run moves those bytes in ${round(tenKCeilingMs)} ms, so on this machine the goal asks for ${round(tenKBytes / MB / 0.1)} MB/s, ${tenKCeilingMs >= 100 ? 'more than the ceiling itself: bounded by TLS on loopback on these shared cores, not by the cache' : 'within the ceiling'}`,
      );
    }
    if (!quick && tenKBytes > 0) {
      const perPod = tenKBytes / 10_000;
      notes.push(
        `the pods are the sim's (test/sim/podgen.ts), ${Math.round(perPod).toLocaleString('en-US')} bytes each as a 10k list serves them (the issue says about 4 KB). Until the first round of 2026-12-02 they were ~5.2 KB (a sidecar with the app container's env and probes), and every earlier round's figures in these notes are of those pods`,
      );
    }
    // What the report's list of missed goals says: by how much, and the ceiling measured beside it.
    const bound = met
      ? undefined
      : [
          ratio < 0.7 ? `the JSON list of ${items.toLocaleString('en-US')} pods moved ${round(jsonMBs)} MB/s, ${round(ratio * 100, 1)}% of the loopback ceiling measured in the same run (${round(ceilMBs)} MB/s) against 70%` : '',
          tenKp50 >= 100
            ? `the 10k-pod list (${round(tenKBytes / MB)} MB) took ${round(tenKp50)} ms at p50 against 100 ms (${round(tenKp50 / 100, 2)}×); ` +
              (tenKCeilingMs >= 100
                ? `the loopback ceiling measured in the same run (the same client reading bytes written from memory over TLS, ${round(ceilMBs)} MB/s) moves those bytes in ${round(tenKCeilingMs)} ms, more than the goal, so on this run's machine the goal is below what a bare TLS socket on loopback delivers to this client; the gateway's full JSON list ran at ${round(ratio * 100, 1)}% of that ceiling`
                : `the loopback ceiling measured in the same run moves those bytes in ${round(tenKCeilingMs)} ms, so the gateway's part is the rest`)
            : '',
        ]
          .filter(Boolean)
          .join('; ');
    return {
      id: 2,
      title: 'Fleet LIST from the cache',
      goal: 'JSON list >= 70% of the loopback ceiling; a 10k-pod list under 100 ms',
      bound,
      figures: {
        pods: items,
        members,
        json_list_bytes: bytes,
        json_list_ms: round(jsonMs),
        json_list_MBps: round(jsonMBs),
        ceiling_ms: round(ceilMs),
        ceiling_MBps: round(ceilMBs),
        json_ratio_to_ceiling: round(ratio, 3),
        table_pages: paged.pages,
        table_pages_total_ms: round(paged.ms),
        table_page_mean_ms: round(pageMs),
        table_pages_MBps: round(paged.bytes / MB / (paged.ms / 1000)),
        full_table_ms: round(summarize(table).p50),
        full_table_MBps: round(tableBytes / MB / (summarize(table).p50 / 1000)),
        list_10k_p50_ms: round(tenKp50),
        list_10k_p99_ms: round(summarize(tenK).p99),
        list_10k_bytes: tenKBytes,
      },
      met,
      notes,
      series: [
        {
          title: 'Fleet LIST throughput vs loopback ceiling',
          x: 'response',
          y: 'MB/s',
          points: [
            { label: 'ceiling', value: round(ceilMBs) },
            { label: 'JSON list', value: round(jsonMBs) },
            { label: 'Table pages', value: round(paged.bytes / MB / (paged.ms / 1000)) },
            { label: 'full Table', value: round(tableBytes / MB / (summarize(table).p50 / 1000)) },
          ],
        },
      ],
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await fleet.close();
  }
};
