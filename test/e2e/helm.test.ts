// The Helm chart (charts/fleetgate) against the tools and servers that judge it for real: helm (built from Go
// modules like the test apiservers) lints and renders it, a real kube-apiserver accepts every rendered object
// (kubectl apply --dry-run=server), the gateway's own loaders accept every rendered configuration in the file
// layout the pod would see, and the gateway started from the rendered single-topology configuration serves
// unauthenticated /livez and /readyz (the probes) against the real control plane.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml, stringify } from 'yaml';
import { loadPolicyFile } from '../../src/audit/policy.js';
import { parseConfig } from '../../src/config/index.js';
import { loadFlowControlDir } from '../../src/flowcontrol/config.js';
import { createCA, issueClientCert, issueServingCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { BIN, ROOT, ensureBuilt } from '../support/build.js';
import { call } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';
import { GATEWAY_USER, startRealFleet, type RealCluster, type RealFleet } from './cluster.js';
import { requireGo } from './require-go.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const CHART = join(ROOT, 'charts/fleetgate');
const NS = 'fleetgate-chart';
const REL = 'fg';
const FULL = 'fg-fleetgate';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { maxBuffer: 64 << 20, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
    if (stdin !== undefined) child.stdin!.end(stdin);
  });
}

/** helm from the binary cache, built by build-binaries.sh on first use (the script's lock serializes builds). */
async function buildHelm(): Promise<string> {
  const r = await new Promise<Run>((resolve) => {
    execFile('bash', [join(HERE, 'build-binaries.sh')], { maxBuffer: 16 << 20, timeout: 30 * 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? 1 : 0, stdout: String(stdout), stderr: String(stderr) }),
    );
  });
  const helm = /^HELM=(.+)$/m.exec(r.stdout)?.[1];
  if (r.code !== 0 || !helm) throw new Error(`build-binaries.sh did not report helm:\n${r.stderr.slice(-4000)}`);
  return helm;
}

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; annotations?: Record<string, string> }; [k: string]: any };

function objects(yamlText: string): Obj[] {
  return parseAllDocuments(yamlText)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

function find(objs: Obj[], kind: string, name: string): Obj {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name} among ${objs.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o;
}

/** "kind/name" of every object, as kubectl names them in its output (kind.group/name). */
function kubectlNames(objs: Obj[]): string[] {
  return objs
    .map((o) => {
      const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
      return `${o.kind.toLowerCase()}${group ? `.${group}` : ''}/${o.metadata.name}`;
    })
    .sort();
}

/**
 * Writes what the pod of deployment would see: each ConfigMap and Secret volume at its mountPath (under root),
 * emptyDirs as empty directories. Returns the --config path under root.
 */
function materialize(objs: Obj[], deployment: string, root: string): string {
  const pod = find(objs, 'Deployment', deployment).spec.template.spec;
  const c = pod.containers[0];
  for (const m of c.volumeMounts as Array<{ name: string; mountPath: string; subPath?: string }>) {
    // subPath mounts are never updated by kubelet: the CRL and flow-control reloads depend on there being none.
    expect(m.subPath, `${deployment} mounts ${m.name} with subPath`).toBeUndefined();
    const vol = (pod.volumes as Array<Record<string, any>>).find((v) => v.name === m.name)!;
    const dir = join(root, m.mountPath);
    mkdirSync(dir, { recursive: true });
    if (vol.configMap) {
      for (const [k, v] of Object.entries(find(objs, 'ConfigMap', vol.configMap.name).data ?? {})) writeFileSync(join(dir, k), String(v));
    } else if (vol.secret) {
      for (const [k, v] of Object.entries(find(objs, 'Secret', vol.secret.secretName).data ?? {})) writeFileSync(join(dir, k), Buffer.from(String(v), 'base64'));
    } else if (!vol.emptyDir) {
      throw new Error(`volume ${m.name} of ${deployment}: unexpected kind ${Object.keys(vol).join(',')}`);
    }
  }
  const args: string[] = c.args;
  return join(root, args[args.indexOf('--config') + 1]!);
}

/** The configuration with every absolute path moved under root, as the loader in this process must see it. */
function rerooted(configPath: string, root: string, change: (cfg: any) => void = () => {}): { text: string; cfg: any } {
  const map = (v: unknown): unknown =>
    typeof v === 'string' && v.startsWith('/') ? join(root, v)
    : Array.isArray(v) ? v.map(map)
    : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, map(x)]))
    : v;
  const cfg = map(parseYaml(readFileSync(configPath, 'utf8'))) as any;
  change(cfg);
  return { text: stringify(cfg), cfg };
}

describe.skipIf(!requireGo())('the Helm chart', () => {
  let helm: string;
  let real: RealFleet;
  let cp: RealCluster;
  let dir: string;
  let servingCaPem: string;
  const files: Record<string, string> = {};
  let gateway: ChildProcess | undefined;

  const template = (args: string[]) => run(helm, ['template', REL, CHART, '--namespace', NS, ...args]);
  const secrets = () => [
    '--set-file', `servingCert.cert=${files.servingCrt}`,
    '--set-file', `servingCert.key=${files.servingKey}`,
    '--set-file', `clientCA.cert=${files.clientCa}`,
    '--set-file', `controlPlane.kubeconfig=${files.controlPlane}`,
  ];
  const split = () => ['--set', 'topology=split', '--set-file', `cacheService.facadeKubeconfig.kubeconfig=${files.facade}`];
  const optional = () => [
    '--set', 'autoscaling.enabled=true',
    '--set', 'serviceMonitor.enabled=true',
    '--set', 'serviceMonitor.tlsSecret=fleetgate-prometheus',
    '--set', 'networkPolicy.enabled=true',
    '--set', 'networkPolicy.ingressFrom[0].ipBlock.cidr=10.0.0.0/8',
    '--set', 'networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring',
  ];
  const staticMembers = () => [
    '--set', 'members.karmada.enabled=false',
    '--set', 'members.static[0].name=member-a',
    '--set-file', `members.static[0].kubeconfig=${files.member}`,
  ];

  async function rendered(args: string[]): Promise<Obj[]> {
    const r = await template(args);
    expect(r.stderr.replace(/^walk\.go.*\n?/gm, ''), 'helm template stderr').toBe('');
    expect(r.code).toBe(0);
    return objects(r.stdout);
  }

  async function dryRun(args: string[]): Promise<{ objs: Obj[]; applied: string[] }> {
    const r = await template(args);
    expect(r.code, r.stderr).toBe(0);
    const a = await kubectl('1.33', cp.kubeconfigPath, ['apply', '--dry-run=server', '--validate=strict', '-n', NS, '-f', '-'], { stdin: r.stdout });
    expect(a.stderr).toBe('');
    expect(a.code).toBe(0);
    const applied = a.stdout
      .trim()
      .split('\n')
      .map((l) => {
        const m = /^(\S+) created \(server dry run\)$/.exec(l);
        if (!m) throw new Error(`unexpected kubectl line: ${l}`);
        return m[1]!;
      })
      .sort();
    return { objs: objects(r.stdout), applied };
  }

  beforeAll(async () => {
    [helm, real] = await Promise.all([buildHelm(), startRealFleet({ members: [] })]);
    cp = real.controlPlane;
    dir = join(real.dir, 'chart');
    mkdirSync(dir);
    const ca = await createCA('fleetgate-ca');
    servingCaPem = ca.certPem;
    const clientCa = await createCA('fleetgate-client-ca');
    const serving = await issueServingCert(ca, [`${FULL}.${NS}.svc`, `${FULL}-cache.${NS}.svc`, '127.0.0.1']);
    const facade = await issueClientCert(clientCa, 'fleetgate-facade', []);
    const put = (name: string, text: string) => {
      const p = join(dir, name);
      writeFileSync(p, text, { mode: 0o600 });
      return p;
    };
    Object.assign(files, {
      servingCrt: put('serving.crt', serving.certPem),
      servingKey: put('serving.key', serving.keyPem),
      clientCa: put('client-ca.crt', clientCa.certPem),
      controlPlane: put('control-plane.kubeconfig', buildKubeconfig({ name: 'control-plane', server: cp.url, caPem: cp.caPem, user: GATEWAY_USER, token: cp.gatewayToken })),
      // A static member: the control plane itself (it has pods), reached with the same identity.
      member: put('member-a.kubeconfig', buildKubeconfig({ name: 'member-a', server: cp.url, caPem: cp.caPem, user: GATEWAY_USER, token: cp.gatewayToken })),
      facade: put('facade.kubeconfig', buildKubeconfig({ name: 'cache', server: `https://${FULL}-cache.${NS}.svc:6443`, caPem: ca.certPem, user: 'fleetgate-facade', clientCertPem: facade.certPem, clientKeyPem: facade.keyPem })),
    });
    // The namespace for real; the ServiceMonitor kind as a minimal CRD, so the optional objects are judged too.
    const ns = await kubectl('1.33', cp.kubeconfigPath, ['create', 'namespace', NS]);
    expect(ns.code, ns.stderr).toBe(0);
    const crd = await kubectl('1.33', cp.kubeconfigPath, ['apply', '-f', '-'], { stdin: SERVICE_MONITOR_CRD });
    expect(crd.code, crd.stderr).toBe(0);
    const est = await kubectl('1.33', cp.kubeconfigPath, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/servicemonitors.monitoring.coreos.com']);
    expect(est.code, est.stderr).toBe(0);
  });

  afterAll(async () => {
    gateway?.kill('SIGKILL');
    await real?.stop();
  });

  describe('helm lint', () => {
    it('passes, also with --strict, for both topologies', async () => {
      for (const args of [secrets(), [...secrets(), ...split(), ...optional()]]) {
        for (const strict of [[], ['--strict']]) {
          const r = await run(helm, ['lint', CHART, ...strict, ...args]);
          expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
          expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
          expect(r.code).toBe(0);
        }
      }
    });

    it('without the secrets names each missing one (lint mode reports fail as INFO; template refuses, below)', async () => {
      const r = await run(helm, ['lint', CHART]);
      for (const m of ['the serving certificate is missing', 'the client CA is missing', 'the control plane kubeconfig is missing']) {
        expect(r.stderr).toContain(`Fail: fleetgate: ${m}`);
      }
    });
  });

  describe('kubectl apply --dry-run=server against a real kube-apiserver', () => {
    it('accepts the default values (topology single)', async () => {
      const { objs, applied } = await dryRun(secrets());
      expect(applied).toEqual(
        [
          `configmap/${FULL}-audit-policy`,
          `configmap/${FULL}-config`,
          `configmap/${FULL}-flowcontrol`,
          `deployment.apps/${FULL}`,
          `poddisruptionbudget.policy/${FULL}`,
          `secret/${FULL}-client-ca`,
          `secret/${FULL}-control-plane`,
          `secret/${FULL}-serving`,
          `service/${FULL}`,
          `serviceaccount/${FULL}`,
        ].sort(),
      );
      expect(kubectlNames(objs)).toEqual(applied);
      const d = find(objs, 'Deployment', FULL);
      expect(d.spec.replicas).toBe(2);
      const pod = d.spec.template.spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
      const c = pod.containers[0];
      expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(c.livenessProbe.httpGet).toEqual({ path: '/livez', port: 'https', scheme: 'HTTPS' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'https', scheme: 'HTTPS' });
      expect(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey).toBe('kubernetes.io/hostname');
      expect(c.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual(expect.arrayContaining(['/tmp', '/var/log/fleetgate']));
    });

    it('accepts the split topology: facades and a member cache with their own Services and PDBs', async () => {
      const { objs, applied } = await dryRun([...secrets(), ...split()]);
      expect(applied).toEqual(
        [
          `configmap/${FULL}-audit-policy`,
          `configmap/${FULL}-config`,
          `configmap/${FULL}-cache-config`,
          `configmap/${FULL}-flowcontrol`,
          `deployment.apps/${FULL}`,
          `deployment.apps/${FULL}-cache`,
          `poddisruptionbudget.policy/${FULL}`,
          `poddisruptionbudget.policy/${FULL}-cache`,
          `secret/${FULL}-cache-service`,
          `secret/${FULL}-client-ca`,
          `secret/${FULL}-control-plane`,
          `secret/${FULL}-serving`,
          `service/${FULL}`,
          `service/${FULL}-cache`,
          `serviceaccount/${FULL}`,
        ].sort(),
      );
      const modes = (cm: string) => parseYaml(find(objs, 'ConfigMap', cm).data['config.yaml']).cache.mode;
      expect([modes(`${FULL}-config`), modes(`${FULL}-cache-config`)]).toEqual(['facade', 'cache']);
      expect(find(objs, 'Deployment', `${FULL}-cache`).spec.replicas).toBe(2);
      expect(find(objs, 'Service', FULL).spec.selector['app.kubernetes.io/component']).toBe('facade');
      expect(find(objs, 'Service', `${FULL}-cache`).spec.selector['app.kubernetes.io/component']).toBe('cache');
      // Each cache pod has its own resourceVersions: a facade's connections must all reach the same one.
      expect(find(objs, 'Service', `${FULL}-cache`).spec.sessionAffinity).toBe('ClientIP');
      const probe = (d: string) => find(objs, 'Deployment', d).spec.template.spec.containers[0].readinessProbe.httpGet.path;
      expect([probe(FULL), probe(`${FULL}-cache`)]).toEqual(['/readyz', '/readyz']);
      // node sizes its heap without regard to the container's limit: the chart sets it, per component, with the
      // young generation a cache under churn wants.
      const heap = (d: string) => find(objs, 'Deployment', d).spec.template.spec.containers[0].env.find((e: any) => e.name === 'NODE_OPTIONS')?.value;
      expect([heap(FULL), heap(`${FULL}-cache`)]).toEqual(['--max-old-space-size=2048 --max-semi-space-size=64', '--max-old-space-size=4096 --max-semi-space-size=64']);
    });

    it('accepts every optional object: HPA, ServiceMonitor, NetworkPolicies', async () => {
      const { objs, applied } = await dryRun([...secrets(), ...split(), ...optional()]);
      expect(applied).toEqual(
        expect.arrayContaining([
          `horizontalpodautoscaler.autoscaling/${FULL}`,
          `servicemonitor.monitoring.coreos.com/${FULL}`,
          `networkpolicy.networking.k8s.io/${FULL}`,
          `networkpolicy.networking.k8s.io/${FULL}-cache`,
        ]),
      );
      expect(kubectlNames(objs)).toEqual(applied);
      // The HPA owns the facades' count; the cache keeps its fixed replicas.
      expect(find(objs, 'Deployment', FULL).spec.replicas).toBeUndefined();
      expect(find(objs, 'HorizontalPodAutoscaler', FULL).spec.scaleTargetRef.name).toBe(FULL);
      // The cache accepts only the facades and the scrapers.
      const cacheIngress = find(objs, 'NetworkPolicy', `${FULL}-cache`).spec.ingress;
      expect(cacheIngress).toEqual([
        {
          from: [
            { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'fleetgate', 'app.kubernetes.io/instance': REL, 'app.kubernetes.io/component': 'facade' } } },
            { namespaceSelector: { matchLabels: { name: 'monitoring' } } },
          ],
          ports: [{ port: 'https', protocol: 'TCP' }],
        },
      ]);
      const sm = find(objs, 'ServiceMonitor', FULL).spec.endpoints[0];
      expect(sm).toMatchObject({ port: 'https', scheme: 'https', path: '/metrics', tlsConfig: { serverName: `${FULL}.${NS}.svc`, keySecret: { name: 'fleetgate-prometheus', key: 'tls.key' } } });
    });

    it('accepts existing Secrets and static members, rendering no Secret of its own for them', async () => {
      const { objs } = await dryRun([
        '--set', 'servingCert.existingSecret=my-serving',
        '--set', 'clientCA.existingSecret=my-client-ca',
        '--set', 'controlPlane.existingSecret=my-control-plane',
        '--set', 'members.existingSecret=my-members',
        '--set', 'members.static[0].name=member-a',
        '--set', 'members.static[1].name=member-b',
      ]);
      expect(objs.filter((o) => o.kind === 'Secret')).toEqual([]);
      const vols = find(objs, 'Deployment', FULL).spec.template.spec.volumes;
      expect(vols.flatMap((v: { secret?: { secretName: string } }) => (v.secret ? [v.secret.secretName] : [])).sort()).toEqual(['my-client-ca', 'my-control-plane', 'my-members', 'my-serving']);
      const cfg = parseYaml(find(objs, 'ConfigMap', `${FULL}-config`).data['config.yaml']);
      expect(cfg.cache.members).toEqual([
        { name: 'member-a', kubeconfig: '/etc/fleetgate/members/member-a.kubeconfig', context: '' },
        { name: 'member-b', kubeconfig: '/etc/fleetgate/members/member-b.kubeconfig', context: '' },
      ]);
    });
  });

  describe('values that cannot work are refused at rendering', () => {
    it.each([
      ['replicas=two', "at '/replicas': got string, want integer"],
      ['topology=triple', "at '/topology': value must be one of 'single', 'split'"],
    ])('values.schema.json rejects %s', async (set, message) => {
      const r = await template([...secrets(), '--set', set]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("values don't meet the specifications of the schema(s)");
      expect(r.stderr).toContain(message);
    });

    it.each([
      ['servingCert', 'fleetgate: the serving certificate is missing: set servingCert.existingSecret'],
      ['clientCA', 'fleetgate: the client CA is missing: set clientCA.existingSecret'],
      ['controlPlane', 'fleetgate: the control plane kubeconfig is missing: set controlPlane.existingSecret'],
    ])('a missing %s fails with a message naming the values', async (what, message) => {
      const args = secrets();
      const kept = args.flatMap((a, i) => (i % 2 === 0 && !args[i + 1]!.startsWith(`${what}.`) ? [a, args[i + 1]!] : []));
      expect(kept.length).toBeLessThan(args.length);
      const r = await template(kept);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(message);
    });

    it('topology split without the facades\' kubeconfig fails', async () => {
      const r = await template([...secrets(), '--set', 'topology=split']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('fleetgate: topology split needs the facades\' kubeconfig for the cache Service');
    });
  });

  describe('rendered configurations are valid for the gateway', () => {
    it.each<[string, () => string[], string[]]>([
      ['single, Karmada discovery', () => secrets(), [FULL]],
      ['single, static members', () => [...secrets(), ...staticMembers()], [FULL]],
      ['split, static members', () => [...secrets(), ...split(), ...staticMembers()], [FULL, `${FULL}-cache`]],
      ['split, everything optional', () => [...secrets(), ...split(), ...optional()], [FULL, `${FULL}-cache`]],
    ])('%s', async (_name, args, deployments) => {
      const objs = await rendered(args());
      for (const d of deployments) {
        const root = mkdtempSync(join(tmpdir(), 'fleetgate-chart-pod-'));
        try {
          const { text, cfg } = rerooted(materialize(objs, d, root), root);
          const config = parseConfig(text, join(root, 'etc/fleetgate/config/config.yaml'));
          expect(config.cache.mode).toBe(d === FULL ? (args().includes('topology=split') ? 'facade' : 'all') : 'cache');
          expect(config.server.port).toBe(6443);
          expect(config.audit.log?.path).toBe(join(root, '/var/log/fleetgate/audit.log'));
          expect(loadPolicyFile(cfg.audit.policyFile).policy.rules.length).toBeGreaterThan(0);
          const fc = await loadFlowControlDir(cfg.flowControl.configDir);
          expect(fc.flowSchemas.length).toBeGreaterThan(0);
          if (config.cache.mode !== 'facade' && args().includes('members.static[0].name=member-a')) {
            expect(config.cache.members.map((m) => m.name)).toEqual(['member-a']);
            expect(config.cache.karmada.enabled).toBe(false);
          }
        } finally {
          rmSync(root, { recursive: true, force: true });
        }
      }
    });

    it('puts the heap limit and the young generation into NODE_OPTIONS, leaving out what is 0', async () => {
      const nodeOptions = (objs: Obj[]) => find(objs, 'Deployment', FULL).spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'NODE_OPTIONS')?.value;
      expect(nodeOptions(await rendered(secrets()))).toBe('--max-old-space-size=2048 --max-semi-space-size=64');
      expect(nodeOptions(await rendered([...secrets(), '--set', 'semiSpaceMB=0']))).toBe('--max-old-space-size=2048');
      expect(nodeOptions(await rendered([...secrets(), '--set', 'heapSizeMB=0', '--set', 'semiSpaceMB=32']))).toBe('--max-semi-space-size=32');
      expect(nodeOptions(await rendered([...secrets(), '--set', 'heapSizeMB=0', '--set', 'semiSpaceMB=0']))).toBeUndefined();
    });

    it('the gateway started from the rendered configuration serves /livez and /readyz to the unauthenticated probes', async () => {
      ensureBuilt();
      const objs = await rendered([...secrets(), ...staticMembers()]);
      const root = join(dir, 'pod');
      // Port 0: a free port, read back from the log; everything else as rendered.
      const { text } = rerooted(materialize(objs, FULL, root), root, (cfg) => (cfg.server.port = 0));
      const configPath = join(root, 'etc/fleetgate/config/served.yaml');
      writeFileSync(configPath, text);
      const g = spawn(process.execPath, [BIN, 'serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } });
      gateway = g;
      let log = '';
      g.stdout!.on('data', (b: Buffer) => (log += b.toString()));
      g.stderr!.on('data', (b: Buffer) => (log += b.toString()));
      const started = Date.now();
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the gateway did not start:\n${log.slice(-3000)}`)), 60_000);
        const check = () => {
          const m = /"port":(\d+)[^\n]*fleetgate is serving/.exec(log);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        };
        g.stdout!.on('data', check);
        g.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`the gateway exited with ${code}:\n${log.slice(-3000)}`));
        });
      });
      // As kubelet probes: HTTPS, no client certificate, no token.
      const ep = { url: `https://127.0.0.1:${port}`, caPem: servingCaPem };
      const live = await call(ep, 'GET', '/livez');
      expect(live.status).toBe(200);
      let ready = await call(ep, 'GET', '/readyz?verbose');
      for (const deadline = Date.now() + 30_000; ready.status !== 200 && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 250));
        ready = await call(ep, 'GET', '/readyz?verbose');
      }
      expect(ready.text).toContain('readyz check passed');
      expect(ready.status).toBe(200);
      console.log(`gateway from the rendered chart: ready ${Date.now() - started} ms after start`);
      g.kill('SIGTERM');
      await new Promise((r) => g.once('exit', r));
      gateway = undefined;
    });
  });

  describe('what rolls the pods and what does not', () => {
    const podTemplate = (objs: Obj[]) => find(objs, 'Deployment', FULL).spec.template;

    it('a new CRL updates the client CA Secret but not the pod template', async () => {
      const crlFile = join(dir, 'client-ca.crl');
      writeFileSync(crlFile, '-----BEGIN X509 CRL-----\nnot checked by the chart\n-----END X509 CRL-----\n');
      const before = await rendered(secrets());
      const after = await rendered([...secrets(), '--set-file', `clientCA.crl=${crlFile}`]);
      expect(podTemplate(after)).toEqual(podTemplate(before));
      expect(Object.keys(find(before, 'Secret', `${FULL}-client-ca`).data)).toEqual(['client-ca.crt']);
      expect(Object.keys(find(after, 'Secret', `${FULL}-client-ca`).data).sort()).toEqual(['client-ca.crl', 'client-ca.crt']);
      const cfg = parseYaml(find(before, 'ConfigMap', `${FULL}-config`).data['config.yaml']);
      expect(cfg.server.tls.clientCRLFile).toBe('/etc/fleetgate/client-ca/client-ca.crl');
    });

    it.each([
      ['config', ['--set', 'config.logging.level=debug']],
      ['audit-policy', ['--set', 'auditPolicy=apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]']],
      ['flowcontrol', ['--set-file', `flowControlFiles.only\\.yaml=${join(ROOT, 'config/flowcontrol/flow-schemas.yaml')}`]],
    ])('a change of %s changes its checksum annotation', async (what, args) => {
      const before = podTemplate(await rendered(secrets())).metadata.annotations;
      const after = podTemplate(await rendered([...secrets(), ...args])).metadata.annotations;
      expect(after[`checksum/${what}`]).not.toBe(before[`checksum/${what}`]);
      for (const other of ['config', 'audit-policy', 'flowcontrol'].filter((o) => o !== what)) expect(after[`checksum/${other}`]).toBe(before[`checksum/${other}`]);
    });
  });

  it('the packaged chart carries the repository\'s audit policy and flow-control files (one copy, through symlinks)', async () => {
    const out = mkdtempSync(join(tmpdir(), 'fleetgate-chart-pkg-'));
    try {
      const p = await run(helm, ['package', CHART, '--destination', out]);
      expect(p.code, p.stderr).toBe(0);
      const tgz = readdirSync(out).find((f) => f.endsWith('.tgz'))!;
      const r = await run(helm, ['template', REL, join(out, tgz), '--namespace', NS, ...secrets()]);
      expect(r.code, r.stderr).toBe(0);
      const objs = objects(r.stdout);
      expect(find(objs, 'ConfigMap', `${FULL}-audit-policy`).data['audit-policy.yaml']).toBe(readFileSync(join(ROOT, 'config/audit-policy.yaml'), 'utf8'));
      const fc = find(objs, 'ConfigMap', `${FULL}-flowcontrol`).data;
      const shipped = readdirSync(join(ROOT, 'config/flowcontrol')).filter((f) => f.endsWith('.yaml')).sort();
      expect(Object.keys(fc).sort()).toEqual(shipped);
      for (const f of shipped) expect(fc[f]).toBe(readFileSync(join(ROOT, 'config/flowcontrol', f), 'utf8'));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

const SERVICE_MONITOR_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`;
