// `npm run sim -- --members N --pods N [--churn OPS_PER_S] [--dir DIR]`: starts a fleet of simulated clusters,
// prints one kubeconfig path per member, and runs until interrupted.

import { parseArgs } from 'node:util';
import { startChurn } from './churn.js';
import { startSimFleet } from './fleet.js';

const { values } = parseArgs({
  options: {
    members: { type: 'string', default: '3' },
    pods: { type: 'string', default: '100' },
    nodes: { type: 'string', default: '3' },
    churn: { type: 'string', default: '0' },
    dir: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

if (values.help) {
  console.log('usage: npm run sim -- [--members N] [--pods N per member] [--nodes N] [--churn ops/s] [--dir DIR]');
  process.exit(0);
}

const count = (name: string, v: string | undefined): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name}: "${v}" is not a whole number >= 0`);
    process.exit(2);
  }
  return n;
};

const members = count('members', values.members);
const names = Array.from({ length: members }, (_, i) => `member-${i < 26 ? String.fromCharCode(97 + i) : i}`);
const started = Date.now();
const fleet = await startSimFleet({ clusters: names, podsPerCluster: count('pods', values.pods), nodesPerCluster: count('nodes', values.nodes), dir: values.dir });
console.log(`fleet of ${members} simulated clusters ready in ${Date.now() - started} ms`);
for (const m of fleet.members) console.log(`${m.name}\t${m.url}\t${m.kubeconfigPath}`);
const rate = count('churn', values.churn);
const churn = rate > 0 ? startChurn(fleet.members.map((m) => m.cluster), { ratePerSecond: rate }) : undefined;
if (churn) console.log(`churn: ${rate} pod operations per second in namespace churn`);

const shutdown = async () => {
  churn?.stop();
  await fleet.close();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
