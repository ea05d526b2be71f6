// Everything one running gateway holds, built from its configuration: the authenticator, the control plane
// connection, the exposed-resource allowlist, metrics and health checks. The chain's steps read what they need
// from here.

import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Attributes, Decision } from '../api/user.js';
import { newAuthenticator, type Authenticator } from '../authn/index.js';
import { compileRules, defaultAdmissionRules, type AdmissionRules } from '../admission/index.js';
import { defaultPolicyPath, loadPolicyFile, newAuditor, type Auditor } from '../audit/index.js';
import { fleetReadAuthorizer, perClusterReadAuthorizer, type CachedReadAuthorizer } from '../authz/cachedreads.js';
import { cachingReviewer } from '../authz/decisioncache.js';
import { newFlowControl, type FlowControl } from '../flowcontrol/index.js';
import { startHeapGrowth, type HeapGrowth } from '../cache/heapgrowth.js';
import { RECOMMENDED_SEMI_SPACE_MB, youngGeneration } from '../cache/younggen.js';
import { jsonScanError, loadJSONScan } from '../api/jsonscan.js';
import { startTouchAhead, type TouchAhead } from '../api/touchahead.js';
import { MergedCache } from '../cache/merged.js';
import type { ActiveWatch } from '../cache/watch.js';
import { ALWAYS_EXPOSED, type Config } from '../config/index.js';
import { startMemberCaches, type MemberCaches } from '../members/caches.js';
import { memberConnections, type MemberConnections } from '../members/connections.js';
import { karmadaMembers } from '../members/karmada.js';
import { combineRegistries, staticRegistry, type MemberRegistry } from '../members/registry.js';
import { staticMembers } from '../members/static.js';
import { newApiserverMetrics, type ApiserverMetrics } from '../metrics/apiserver.js';
import { inflightRequests, type InflightRequests } from '../metrics/inflight.js';
import { upstreamFromKubeconfig, type Upstream } from '../upstream/client.js';
import { exposedResources, type ExposedResources } from '../upstream/discovery.js';
import { requestJSON, subjectAccessReview } from '../upstream/forward.js';
import type { HealthCheck, HealthEndpoints } from './health.js';

export interface Gateway {
  config: Config;
  log: Logger;
  authenticator: Authenticator;
  controlPlane: Upstream;
  exposed: ExposedResources;
  metrics: ApiserverMetrics;
  /** apiserver_current_inflight_requests: its step in the chain, and the timer that sets it each second. */
  inflight: InflightRequests;
  health: HealthEndpoints;
  /** SubjectAccessReview against the control plane. */
  sar: (attrs: Attributes) => Promise<Decision>;
  /** Set once shutdown has begun: /readyz fails so load balancers stop sending. */
  shuttingDown: boolean;
  /** The member cache (modes all and cache). */
  members?: MemberCluster;
  /** Mode facade: the cache service that serves pods, events and /clusters/... */
  cacheService?: Upstream;
  /** Decides cached reads (SubjectAccessReview against the control plane). */
  authorizeCachedRead: CachedReadAuthorizer;
  /** Watches served from the cache, ended on shutdown. */
  watches: Set<ActiveWatch>;
  auditor: Auditor;
  /** Absent when flowControl.enabled is false. */
  flowControl?: FlowControl;
  admissionRules: AdmissionRules;
  close(): Promise<void>;
}

/** Everything the member cache consists of. */
export interface MemberCluster {
  registry: MemberRegistry;
  connections: MemberConnections;
  cache: MergedCache;
  caches: MemberCaches;
  heapGrowth: HeapGrowth;
  touchAhead: TouchAhead;
}

export async function newGateway(config: Config, log: Logger): Promise<Gateway> {
  const metrics = newApiserverMetrics();
  const tls = config.server.tls;
  const authenticator = await newAuthenticator(
    {
      anonymous: config.authentication.anonymous.enabled,
      x509: config.authentication.x509.enabled,
      oidc: config.authentication.oidc,
      tokenFile: config.authentication.tokenFile,
      ...(tls.clientCRLFile && tls.clientCAFile ? { revocation: { crlFile: tls.clientCRLFile, clientCAFile: tls.clientCAFile } } : {}),
    },
    { log, registry: metrics.registry },
  );
  const controlPlane = upstreamFromKubeconfig(config.controlPlane.kubeconfig, config.controlPlane.context || undefined, 'control-plane');
  controlPlane.requestTimeoutMs = config.controlPlane.timeoutSeconds * 1000;
  const exposed = exposedResources([...ALWAYS_EXPOSED, ...config.resources.exposed]);
  const sar = (attrs: Attributes) => subjectAccessReview(controlPlane, attrs);
  const members = config.cache.mode === 'facade' ? undefined : startMembers(config, controlPlane, log, metrics);
  const cacheService = config.cache.facade && config.cache.mode === 'facade' ? upstreamFromKubeconfig(config.cache.facade.kubeconfig, config.cache.facade.context || undefined, 'cache-service') : undefined;
  const auditor = newAuditorFrom(config, log, metrics);
  const flowControl = config.flowControl.enabled
    ? await newFlowControl({
        configDir: config.flowControl.configDir || undefined,
        maxRequestsInflight: config.flowControl.maxRequestsInflight,
        maxMutatingRequestsInflight: config.flowControl.maxMutatingRequestsInflight,
        registry: metrics.registry,
        log: log.child({ component: 'flowcontrol' }),
      })
    : undefined;
  const admissionRules = admissionRulesFrom(config);
  const g: Gateway = {
    config,
    log,
    authenticator,
    controlPlane,
    exposed,
    metrics,
    inflight: inflightRequests(metrics),
    health: { livez: [], readyz: [] },
    sar,
    shuttingDown: false,
    members,
    cacheService,
    authorizeCachedRead: cachedReadAuthorizer(config, sar, members),
    watches: new Set(),
    auditor,
    flowControl,
    admissionRules,
    async close() {
      g.inflight.stop();
      for (const w of g.watches) w.stop();
      authenticator.close();
      flowControl?.close();
      await auditor.close();
      if (members) {
        await members.caches.close();
        await members.connections.close();
        await members.registry.close();
        members.heapGrowth.stop();
        await members.touchAhead.stop();
      }
      await cacheService?.close();
      await controlPlane.close();
    },
  };
  const ping: HealthCheck = { name: 'ping', check: async () => {} };
  const log_: HealthCheck = { name: 'log', check: async () => {} };
  g.health.livez.push(ping, log_);
  g.health.readyz.push(ping, log_, controlPlaneReachable(g), {
    name: 'shutdown',
    check: async () => {
      if (g.shuttingDown) throw new Error('the gateway is shutting down');
    },
  });
  if (members) g.health.readyz.push(...memberChecks(members));
  return g;
}

/**
 * Cached reads: one review against the control plane for the whole fleet, or (perCluster) one per member against
 * its own RBAC; decisions cached with separate allowed and denied lifetimes either way.
 */
function cachedReadAuthorizer(config: Config, sar: (a: Attributes) => Promise<Decision>, members: MemberCluster | undefined): CachedReadAuthorizer {
  const c = config.authorization.cachedReads;
  const cache = { maxEntries: c.cacheSize, allowedTTLms: c.allowedTTLSeconds * 1000, deniedTTLms: c.deniedTTLSeconds * 1000 };
  if (c.mode === 'perCluster' && members) {
    return perClusterReadAuthorizer(
      (cluster) => {
        const conn = members.connections.get(cluster);
        return conn && ((a: Attributes) => subjectAccessReview(conn.upstream, a));
      },
      () => members.connections.names(),
      { cache },
    );
  }
  return fleetReadAuthorizer(cachingReviewer(sar, cache));
}

function newAuditorFrom(config: Config, log: Logger, metrics: ApiserverMetrics): Auditor {
  const a = config.audit;
  const policy = loadPolicyFile(a.policyFile || defaultPolicyPath());
  const webhookUpstream = a.webhook ? upstreamFromKubeconfig(a.webhook.kubeconfig, a.webhook.context || undefined, 'audit-webhook') : undefined;
  return newAuditor(
    {
      policy,
      ...(a.log ? { log: { path: a.log.path, maxSizeBytes: a.log.maxSizeBytes, maxBackups: a.log.maxBackups } } : {}),
      ...(a.webhook ? { webhook: { ...(a.webhook.mode ? { mode: a.webhook.mode } : {}), bufferSize: a.webhook.bufferSize, maxBatchSize: a.webhook.maxBatchSize, maxBatchWaitMs: a.webhook.maxBatchWaitMs } } : {}),
      failOpen: a.failOpen,
      maxRequestBodyBytes: config.server.maxRequestBodyBytes,
    },
    { log: log.child({ component: 'audit' }), registry: metrics.registry, ...(webhookUpstream ? { webhookUpstream } : {}) },
  );
}

function admissionRulesFrom(config: Config): AdmissionRules {
  const rules = defaultAdmissionRules();
  const a = config.admission;
  rules.deletionProtection.enabled = a.deletionProtection.enabled;
  rules.scaleDown.enabled = a.scaleDown.enabled;
  rules.scaleDown.maxReductionPercent = a.scaleDown.maxReductionPercent;
  rules.scaleDown.allowScaleToZero = a.scaleDown.allowScaleToZero;
  rules.scaleDown.resources.push(...a.scaleDown.resources);
  // Fails at start, naming the rule, rather than at the first request.
  compileRules(rules);
  return rules;
}

function startMembers(config: Config, controlPlane: Upstream, log: Logger, metrics: ApiserverMetrics): MemberCluster {
  const c = config.cache;
  const heapGrowth = startHeapGrowth(c.heapGrowingPercent);
  log.info({ heapGrowingPercent: heapGrowth.setting }, 'cache: JS heap growth between full collections');
  const young = youngGeneration();
  log.info(
    { semiSpaceMB: young.semiSpaceMB ?? null, from: young.source },
    young.semiSpaceMB !== undefined && young.semiSpaceMB >= RECOMMENDED_SEMI_SPACE_MB
      ? 'cache: V8 young generation'
      : `cache: V8 young generation smaller than the ${RECOMMENDED_SEMI_SPACE_MB} MiB semi-spaces the image and chart give node; under churn a large cache then promotes more and V8 marks its heap more often (node --max-semi-space-size=${RECOMMENDED_SEMI_SPACE_MB}, see docs/operations.md)`,
  );
  // Loaded before the first lists: until it is, members' pods are checked by the byte scanner alone (slower, same
  // result).
  void loadJSONScan().then((scan) =>
    scan ? log.info('cache: WebAssembly JSON scan loaded') : log.warn({ err: jsonScanError }, "cache: WebAssembly JSON scan not available; members' pods (list pages and watch events) are checked by the byte scanner alone, and taking them in costs ~1.6-1.9 times the CPU per pod"),
  );
  const touchAhead = startTouchAhead({ maxBytes: c.touchAheadBytes, onError: (err) => log.error({ err: err.message }, 'cache: touch-ahead thread failed; slabs are faulted in on the event loop from now on') });
  const sources: MemberRegistry[] = [staticRegistry(staticMembers(c.members))];
  if (c.karmada.enabled) sources.push(karmadaMembers(controlPlane, { log: log.child({ component: 'karmada-members' }) }));
  const registry = sources.length === 1 ? sources[0]! : combineRegistries(sources, log);
  const connections = memberConnections(registry, { log });
  const cache = new MergedCache({ instanceID: randomUUID(), windowSize: c.windowSize, dropManagedFields: c.dropManagedFields });
  const caches = startMemberCaches({ source: registry, connections, cache, qps: c.qps, burst: c.burst, intakeWorkers: c.intakeWorkers, log: log.child({ component: 'member-cache' }), registry: metrics.registry });
  return { registry, connections, cache, caches, heapGrowth, touchAhead };
}

/**
 * /readyz per member: ready once the member has delivered its first list, or has failed trying (a member that is
 * down must not keep the gateway out of rotation: its objects are served from the last known state, with a
 * Warning). The verbose listing names objects and since when.
 */
function memberChecks(m: MemberCluster): HealthCheck[] {
  return [
    {
      name: 'member-caches',
      async check() {
        const pending = m.caches.listing();
        if (pending.length > 0) throw new Error(`still listing: ${pending.join(', ')}`);
        if (!m.caches.ready()) throw new Error('waiting for the member registry, or collecting the heap once after the first lists');
      },
      details: () =>
        m.caches.statuses().map((s) => {
          const state = s.synced ? (s.stale ? `stale since ${iso(s.since)}` : `synced since ${iso(s.since)}`) : s.lastError ? `unreachable: ${s.lastError}` : 'listing';
          return `${s.name}: ${state}; ${s.objects.pods ?? 0} pods, ${s.objects.events ?? 0} events`;
        }),
    },
  ];
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Ready only while the control plane answers its own /readyz; the answer is reused for a second. */
function controlPlaneReachable(g: Gateway): HealthCheck {
  let last: { at: number; error?: string } | undefined;
  return {
    name: 'control-plane',
    async check() {
      if (!last || Date.now() - last.at > 1000) {
        try {
          const r = await requestJSON(g.controlPlane, 'GET', '/readyz', undefined, undefined, 5000);
          last = { at: Date.now(), error: r.status === 200 ? undefined : `control plane /readyz answered ${r.status}` };
        } catch (e) {
          last = { at: Date.now(), error: (e as Error).message };
        }
      }
      if (last.error) throw new Error(last.error);
    },
  };
}
