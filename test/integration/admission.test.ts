// Deletion and scale-down protection end to end: real kubectl, through a small gateway whose chain is request
// info -> token authentication -> admissionStep -> forward(), to a simulated control plane. (The gateway's own
// chain gets admission from the lead; this file needs only the step and the forwarding it sits in front of.)

import { randomUUID } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionStep } from '../../src/admission/index.js';
import { defaultAdmissionRules } from '../../src/admission/rules.js';
import { newUnauthorized, toStatus } from '../../src/api/status.js';
import { issueServingCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import type { UserInfo } from '../../src/api/user.js';
import { readBody } from '../../src/request/body.js';
import { requestInfoStep, targetPath } from '../../src/request/filter.js';
import { compose, type Step } from '../../src/server/chain.js';
import type { RequestContext } from '../../src/server/context.js';
import { writeStatus } from '../../src/server/respond.js';
import { upstreamFromKubeconfig, type Upstream } from '../../src/upstream/client.js';
import { forward } from '../../src/upstream/forward.js';
import { cloneSetCRD } from '../sim/crds.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { kubectl, type KubectlVersion } from '../support/kubectl.js';

const BODY_LIMIT = 3 * 1024 * 1024;
const BREAK_GLASS = 'fleet-breakglass';

let fleet: SimFleet;
let cp: Upstream;
let server: Server;
let dir: string;
const kubeconfigs: Record<'ops' | 'sre', string> = { ops: '', sre: '' };
/** Audit annotations by Audit-ID, as the audit hook received them. */
const annotations = new Map<string, Record<string, string>>();

const tokens = new Map<string, UserInfo>([
  ['ops-token', { username: 'ops', groups: ['system:masters', 'system:authenticated'] }],
  ['sre-token', { username: 'sre', groups: ['system:masters', BREAK_GLASS, 'system:authenticated'] }],
]);

const authenticate: Step = async (ctx, next) => {
  const h = ctx.req.headers.authorization;
  const user = typeof h === 'string' && h.startsWith('Bearer ') ? tokens.get(h.slice(7)) : undefined;
  if (!user) throw newUnauthorized();
  ctx.user = user;
  await next();
};

/** What routing does for a forwarded request: the body admission already read, or the stream. */
const forwardToControlPlane: Step = async (ctx) => {
  let body = ctx.body;
  if (!body && (ctx.req.method === 'POST' || ctx.req.method === 'PUT' || ctx.req.method === 'PATCH')) body = await readBody(ctx, BODY_LIMIT);
  await forward(cp, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, path: targetPath(ctx), body, timeoutMs: 10_000 });
};

beforeAll(async () => {
  fleet = await startSimFleet({ clusters: ['control-plane'] });
  const sim = fleet.member('control-plane').cluster;
  sim.create(sim.resourceFor('apiextensions.k8s.io', 'customresourcedefinitions')!, '', structuredClone(cloneSetCRD));
  dir = fleet.dir;
  cp = upstreamFromKubeconfig(fleet.member('control-plane').kubeconfigPath, undefined, 'control-plane');
  const chain = compose([
    requestInfoStep({ deadlineMs: 10_000 }),
    authenticate,
    admissionStep({
      upstreamFor: () => cp,
      rules: defaultAdmissionRules(),
      breakGlassGroups: [BREAK_GLASS],
      audit: (ctx, key, value) => {
        const a = annotations.get(ctx.auditID) ?? {};
        a[key] = value;
        annotations.set(ctx.auditID, a);
      },
      maxRequestBodyBytes: BODY_LIMIT,
    }),
    forwardToControlPlane,
  ]);
  const log = pino({ level: 'silent' });
  // HTTPS: client-go sends bearer tokens only over TLS.
  const serving = await issueServingCert(fleet.servingCA, ['127.0.0.1']);
  server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const auditID = randomUUID();
    res.setHeader('Audit-Id', auditID);
    const ctx = { req, res, url: new URL(req.url ?? '/', 'https://gateway.invalid'), auditID, log } as RequestContext;
    chain(ctx).catch((e) => writeStatus(res, auditID, toStatus(e)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const who of ['ops', 'sre'] as const) {
    kubeconfigs[who] = join(dir, `gateway-${who}.kubeconfig`);
    await writeFile(kubeconfigs[who], buildKubeconfig({ name: 'gateway', server: url, caPem: fleet.servingCA.certPem, user: who, token: `${who}-token` }), { mode: 0o600 });
  }
  const applied = await kubectl('1.33', kubeconfigs.ops, ['apply', '-f', '-'], { stdin: seed() });
  expect(applied.stderr).toBe('');
}, 120_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await cp?.close();
  await fleet?.close();
});

function deployment(ns: string, name: string, replicas: number, labels: Record<string, string> = {}, kind = 'apps/v1 Deployment'): string {
  const [apiVersion, k] = kind.split(' ');
  const l = Object.entries({ app: name, ...labels }).map(([k, v]) => `    ${k}: "${v}"\n`).join('');
  return `---\napiVersion: ${apiVersion}\nkind: ${k}\nmetadata:\n  name: ${name}\n  namespace: ${ns}\n  labels:\n${l}spec:\n  replicas: ${replicas}\n  selector:\n    matchLabels: {app: ${name}}\n  template:\n    metadata:\n      labels: {app: ${name}}\n    spec:\n      containers:\n      - name: c\n        image: nginx:1.27\n`;
}

const PROTECTED = { 'fleetgate.io/deletion-protection': 'Always' };
const CLONESET = 'apps.kruise.io/v1alpha1 CloneSet';

function seed(): string {
  let y = '';
  for (const ns of ['shop', 'sweep', 'sweep-old', 'empty']) y += `---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${ns}\n`;
  y += deployment('shop', 'web', 10);
  y += deployment('shop', 'db', 2, PROTECTED);
  y += deployment('shop', 'cache', 1, { 'resourcetemplate.karmada.io/deletion-protected': 'Always' });
  y += deployment('shop', 'api', 1);
  y += deployment('empty', 'scratch', 1);
  y += deployment('shop', 'clones', 10, {}, CLONESET);
  y += deployment('shop', 'guarded-clones', 3, PROTECTED, CLONESET);
  // The protected one sorts in the middle: kubectl deletes in list order and carries on past a refusal.
  for (const ns of ['sweep', 'sweep-old']) {
    y += deployment(ns, 'alpha', 1);
    y += deployment(ns, 'beta', 1, PROTECTED);
    y += deployment(ns, 'gamma', 1);
  }
  return y;
}

function stored(ns: string, name: string, group = 'apps', resource = 'deployments'): any {
  return fleet.member('control-plane').cluster.get(group, resource, ns, name);
}

function lastAnnotations(): Record<string, string> {
  return [...annotations.values()].at(-1) ?? {};
}

describe('scale-down protection (kubectl 1.33)', () => {
  const v: KubectlVersion = '1.33';

  it('with 10 replicas, scale to 1 and to 0 is refused and to 6 is allowed', async () => {
    const one = await kubectl(v, kubeconfigs.ops, ['scale', 'deploy', 'web', '-n', 'shop', '--replicas=1']);
    expect(one.code).not.toBe(0);
    expect(one.stderr.trim()).toBe(
      'Error from server (Forbidden): deployments.apps "web" is forbidden: scale-down protection: this change would take it from 10 to 1 replicas, ' +
        'removing more than 50% of them at once; scale down in steps of at most 50% (to no fewer than 5 replicas now), or ask a member of the break-glass group "fleet-breakglass"',
    );
    expect(stored('shop', 'web').spec.replicas).toBe(10);

    const zero = await kubectl(v, kubeconfigs.ops, ['scale', 'deploy', 'web', '-n', 'shop', '--replicas=0']);
    expect(zero.code).not.toBe(0);
    expect(zero.stderr).toContain('this change would take it from 10 to 0 replicas, and no single change may take it to 0; keep at least 1 replica');
    expect(stored('shop', 'web').spec.replicas).toBe(10);

    const six = await kubectl(v, kubeconfigs.ops, ['scale', 'deploy', 'web', '-n', 'shop', '--replicas=6']);
    expect(six.stderr).toBe('');
    expect(six.stdout.trim()).toBe('deployment.apps/web scaled');
    expect(stored('shop', 'web').spec.replicas).toBe(6);
    expect(lastAnnotations()['admission.fleetgate.io/scale-down-protection']).toBe('allowed: from 10 to 6 replicas');
  });

  it('a patch, an apply and an edit that shrink too much are refused', async () => {
    const patch = await kubectl(v, kubeconfigs.ops, ['patch', 'deploy', 'web', '-n', 'shop', '-p', '{"spec":{"replicas":2}}']);
    expect(patch.code).not.toBe(0);
    expect(patch.stderr).toContain('deployments.apps "web" is forbidden: scale-down protection: this change would take it from 6 to 2 replicas');

    const jsonPatch = await kubectl(v, kubeconfigs.ops, ['patch', 'deploy', 'web', '-n', 'shop', '--type=json', '-p', '[{"op":"replace","path":"/spec/replicas","value":0}]']);
    expect(jsonPatch.stderr).toContain('from 6 to 0 replicas, and no single change may take it to 0');

    const apply = await kubectl(v, kubeconfigs.ops, ['apply', '-f', '-'], { stdin: deployment('shop', 'web', 1) });
    expect(apply.code).not.toBe(0);
    expect(apply.stderr).toContain('deployments.apps "web" is forbidden: scale-down protection: this change would take it from 6 to 1 replicas');

    const editor = join(dir, 'shrink-editor.sh');
    await writeFile(editor, `#!/bin/sh\nsed -i 's/^  replicas: [0-9]*$/  replicas: 1/' "$1"\n`);
    await chmod(editor, 0o755);
    const edit = await kubectl(v, kubeconfigs.ops, ['edit', 'deploy', 'web', '-n', 'shop'], { env: { EDITOR: editor, KUBE_EDITOR: editor } });
    expect(edit.code).not.toBe(0);
    expect(edit.stderr).toContain('deployments.apps "web" is forbidden: scale-down protection: this change would take it from 6 to 1 replicas');
    expect(stored('shop', 'web').spec.replicas).toBe(6);

    // The same kinds of change within the limit go through.
    expect((await kubectl(v, kubeconfigs.ops, ['patch', 'deploy', 'web', '-n', 'shop', '-p', '{"spec":{"replicas":3}}'])).stderr).toBe('');
    expect((await kubectl(v, kubeconfigs.ops, ['apply', '-f', '-'], { stdin: deployment('shop', 'web', 4) })).stderr).toBe('');
    expect(stored('shop', 'web').spec.replicas).toBe(4);
  });

  it('guards CloneSets the same way, through their scale subresource', async () => {
    const two = await kubectl(v, kubeconfigs.ops, ['scale', 'cloneset', 'clones', '-n', 'shop', '--replicas=2']);
    expect(two.code).not.toBe(0);
    expect(two.stderr).toContain('clonesets.apps.kruise.io "clones" is forbidden: scale-down protection: this change would take it from 10 to 2 replicas');
    expect(stored('shop', 'clones', 'apps.kruise.io', 'clonesets').spec.replicas).toBe(10);
    const five = await kubectl(v, kubeconfigs.ops, ['scale', 'cloneset', 'clones', '-n', 'shop', '--replicas=5']);
    expect(five.stderr).toBe('');
    expect(stored('shop', 'clones', 'apps.kruise.io', 'clonesets').spec.replicas).toBe(5);
  });

  it('a member of the break-glass group may scale to 0; the bypass is in the audit annotations', async () => {
    const r = await kubectl(v, kubeconfigs.sre, ['scale', 'deploy', 'web', '-n', 'shop', '--replicas=0']);
    expect(r.stderr).toBe('');
    expect(stored('shop', 'web').spec.replicas).toBe(0);
    expect(lastAnnotations()['admission.fleetgate.io/scale-down-protection']).toBe(
      'bypassed by break-glass group "fleet-breakglass": scale-down protection: this change would take it from 4 to 0 replicas, and no single change may take it to 0',
    );
  });
});

describe('deletion protection', () => {
  it('refuses deleting a protected Deployment or CloneSet with the rule in the message, and deletes an unprotected one', async () => {
    const db = await kubectl('1.33', kubeconfigs.ops, ['delete', 'deploy', 'db', '-n', 'shop']);
    expect(db.code).not.toBe(0);
    expect(db.stderr.trim()).toBe(
      'Error from server (Forbidden): deployments.apps "db" is forbidden: deletion protection: it is labelled fleetgate.io/deletion-protection=Always; ' +
        'remove the label first (kubectl label deployments.apps db -n shop fleetgate.io/deletion-protection-), or ask a member of the break-glass group "fleet-breakglass"',
    );
    expect(stored('shop', 'db')).toBeDefined();

    const cache = await kubectl('1.33', kubeconfigs.ops, ['delete', 'deploy', 'cache', '-n', 'shop']);
    expect(cache.stderr).toContain('it is labelled resourcetemplate.karmada.io/deletion-protected=Always');
    expect(stored('shop', 'cache')).toBeDefined();

    const clones = await kubectl('1.33', kubeconfigs.ops, ['delete', 'cloneset', 'guarded-clones', '-n', 'shop']);
    expect(clones.stderr).toContain('clonesets.apps.kruise.io "guarded-clones" is forbidden: deletion protection: it is labelled fleetgate.io/deletion-protection=Always');
    expect(stored('shop', 'guarded-clones', 'apps.kruise.io', 'clonesets')).toBeDefined();

    const api = await kubectl('1.33', kubeconfigs.ops, ['delete', 'deploy', 'api', '-n', 'shop']);
    expect(api.stderr).toBe('');
    expect(api.stdout.trim()).toBe('deployment.apps "api" deleted');
    expect(stored('shop', 'api')).toBeUndefined();
  });

  it.each<[KubectlVersion, string]>([
    ['1.33', 'sweep'],
    ['1.27', 'sweep-old'],
  ])('kubectl %s delete deploy --all -n NS, where NS holds a protected one, deletes nothing', async (v, ns) => {
    const r = await kubectl(v, kubeconfigs.ops, ['delete', 'deploy', '--all', '-n', ns]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'deployments.apps is forbidden: deletion protection: the selection holds protected deployments.apps: "beta" (fleetgate.io/deletion-protection=Always), so nothing is deleted',
    );
    for (const name of ['alpha', 'beta', 'gamma']) expect(stored(ns, name), `${ns}/${name}`).toBeDefined();

    const bySelector = await kubectl(v, kubeconfigs.ops, ['delete', 'deploy', '-l', 'app in (alpha,beta)', '-n', ns]);
    expect(bySelector.code).not.toBe(0);
    expect(bySelector.stderr).toContain('the selection holds protected deployments.apps: "beta"');
    expect(stored(ns, 'alpha')).toBeDefined();
    // A selection without protected objects is deleted as usual.
    const gamma = await kubectl(v, kubeconfigs.ops, ['delete', 'deploy', '-l', 'app=gamma', '-n', ns]);
    expect(gamma.stdout.trim()).toBe('deployment.apps "gamma" deleted');
    expect(stored(ns, 'gamma')).toBeUndefined();
  });

  it('a deletecollection that would take a protected object deletes nothing; one that leaves it out goes ahead', async () => {
    const all = await kubectl('1.33', kubeconfigs.ops, ['delete', '--raw', '/apis/apps/v1/namespaces/sweep/deployments']);
    expect(all.code).not.toBe(0);
    expect(all.stderr).toContain('deletion protection: the selection holds protected deployments.apps: "beta"');
    for (const name of ['alpha', 'beta']) expect(stored('sweep', name)).toBeDefined();

    const others = await kubectl('1.33', kubeconfigs.ops, ['delete', '--raw', '/apis/apps/v1/namespaces/sweep/deployments?labelSelector=fleetgate.io%2Fdeletion-protection!%3DAlways']);
    expect(others.stderr).toBe('');
    expect(stored('sweep', 'alpha')).toBeUndefined();
    expect(stored('sweep', 'beta')).toBeDefined();
  });

  it('deleting a namespace that holds a protected object is refused; an unprotected namespace is deleted', async () => {
    const r = await kubectl('1.33', kubeconfigs.ops, ['delete', 'namespace', 'sweep']);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(
      'Error from server (Forbidden): namespaces "sweep" is forbidden: deletion protection: the namespace holds protected objects: deployments.apps "beta" ' +
        '(fleetgate.io/deletion-protection=Always); remove the label from them first, or ask a member of the break-glass group "fleet-breakglass"',
    );
    const ns = fleet.member('control-plane').cluster.get('', 'namespaces', '', 'sweep') as any;
    expect(ns.metadata.deletionTimestamp).toBeUndefined();
    expect(stored('sweep', 'beta')).toBeDefined();

    const empty = await kubectl('1.33', kubeconfigs.ops, ['delete', 'namespace', 'empty', '--wait=false']);
    expect(empty.stderr).toBe('');
    expect(empty.stdout.trim()).toBe('namespace "empty" deleted');
  });

  it('a break-glass member deletes a protected Deployment; the bypass is audited', async () => {
    const r = await kubectl('1.33', kubeconfigs.sre, ['delete', 'deploy', 'db', '-n', 'shop']);
    expect(r.stderr).toBe('');
    expect(stored('shop', 'db')).toBeUndefined();
    const bypass = [...annotations.values()].find((a) => a['admission.fleetgate.io/deletion-protection']?.startsWith('bypassed'));
    expect(bypass?.['admission.fleetgate.io/deletion-protection']).toBe(
      'bypassed by break-glass group "fleet-breakglass": deletion protection: it is labelled fleetgate.io/deletion-protection=Always',
    );
  });
});
