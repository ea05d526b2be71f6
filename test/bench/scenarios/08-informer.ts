// Scenario 8: a client-go SharedInformer on pods (test/clients/informer) syncing its initial list through the gateway
// (from the member cache) against the same pods straight from the member (a sim member). Time from the informer's
// start to HasSynced, both ways, in alternating rounds; the gateway's own cache is synced before the first round.

import { buildInformer, startInformer, type InformerResult } from '../../clients/informer.js';
import { nowMs, round, type Scenario, type ScenarioResult } from '../lib.js';
import { startCachedGateway } from './07-fairness.js';

async function syncOnce(kubeconfig: string, pods: number): Promise<{ wallMs: number; result: InformerResult }> {
  const t0 = nowMs();
  const inf = startInformer(kubeconfig);
  try {
    await inf.waitFor((s) => s.synced, 300_000);
  } catch (e) {
    await inf.stop().catch(() => undefined);
    throw e;
  }
  const wallMs = nowMs() - t0;
  const result = await inf.stop();
  if (result.pods.length !== pods) throw new Error(`informer synced ${result.pods.length} pods, want ${pods}`);
  return { wallMs, result };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

export const run: Scenario = async ({ quick, log }) => {
  const pods = quick ? 10_000 : 100_000;
  const rounds = quick ? 2 : 3;
  log('08: building the client-go informer (cached after the first build)');
  await buildInformer();
  const cg = await startCachedGateway({ members: ['member-a'], podsPerCluster: pods, log: (m) => log(`08: ${m}`) });
  try {
    const direct = await cg.fleet!.kubeconfigFor('member-a', 'bench-informer', ['system:masters']);
    const viaGw = await cg.gw.kubeconfigFor('bench-informer', ['bench']);
    const times = { direct: [] as number[], gateway: [] as number[] };
    const own = { direct: [] as number[], gateway: [] as number[] };
    const watchList = { direct: false, gateway: false };
    for (let i = 0; i < rounds; i++) {
      const order = i % 2 === 0 ? (['direct', 'gateway'] as const) : (['gateway', 'direct'] as const);
      for (const side of order) {
        const r = await syncOnce(side === 'direct' ? direct : viaGw, pods);
        times[side].push(r.wallMs);
        if (r.result.syncedAfterMs !== undefined) own[side].push(r.result.syncedAfterMs);
        watchList[side] ||= r.result.watchListUsed;
        log(`08: round ${i + 1} ${side}: synced ${pods} pods in ${round(r.wallMs, 0)} ms (informer's own clock ${r.result.syncedAfterMs} ms; watch-list ${r.result.watchListUsed}; ${r.result.requests.length} requests)`);
      }
    }
    const d = median(times.direct);
    const g = median(times.gateway);
    const figures: ScenarioResult['figures'] = {
      verdict: `${g <= d * 1.25 ? 'met' : 'missed'}: ${pods} pods synced in ${round(g / 1000, 2)} s through the gateway vs ${round(d / 1000, 2)} s direct (${round(g / d, 2)}×)`,
      pods,
      direct_sync_ms: round(d, 0),
      gateway_sync_ms: round(g, 0),
      gateway_to_direct_ratio: round(g / d, 2),
      direct_sync_ms_informer_clock: round(median(own.direct), 0),
      gateway_sync_ms_informer_clock: round(median(own.gateway), 0),
      gateway_pods_per_s: round(pods / (g / 1000), 0),
      watch_list_direct: String(watchList.direct),
      watch_list_gateway: String(watchList.gateway),
    };
    return {
      id: 8,
      title: 'client-go informer initial sync',
      goal: 'informer sync through the gateway vs the member directly (the issue sets no bound; judged: ≤ 1.25× direct)',
      figures,
      // The issue sets no bound here; "met" means: through the gateway no slower than the member beyond this machine's
      // run-to-run noise (about ±15% on a few-second sync).
      met: g <= d * 1.25,
      notes: [
        `one sim member with ${pods} generated pods; median of ${rounds} alternating rounds per side; time from starting the informer process to HasSynced (wall) and as the informer measured it; met = through the gateway at most 1.25× direct (the issue names no bound; runs vary ±15% here)`,
        'both sides page the list (limit=500, 21 requests at 10k pods); the sync time is mostly the informer process itself (client-go decoding ~4 KB pods and the test program printing one JSON line per event), so the ratio, not the absolute time, says what the gateway costs',
      ],
      series: [
        {
          title: `Informer initial sync of ${pods} pods (ms)`,
          x: 'path',
          y: 'ms',
          points: [
            { label: 'direct (member)', value: round(d, 0) },
            { label: 'through gateway', value: round(g, 0) },
          ],
        },
      ],
    };
  } finally {
    await cg.close();
  }
};
