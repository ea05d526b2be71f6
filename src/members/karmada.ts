// Members discovered from Karmada: a reflector follows cluster.karmada.io/v1alpha1 Cluster objects on the control
// plane, and each Cluster becomes a member once its secrets are read: spec.secretRef (token and caBundle: the
// gateway's identity there) and spec.impersonatorSecretRef (token: the identity that impersonates callers).
// Secrets are read again every resyncMs, so a rotated token or CA shows up as 'changed'. A Cluster that cannot
// be used yet (secret missing, no endpoint) is reported and retried with backoff, never silently dropped.

import type { Logger } from 'pino';
import { isDNS1123Label, type KubeObject } from '../api/meta.js';
import { backoff as newBackoff, tokenBucket, type Backoff, type RateLimiter } from '../cache/ratelimit.js';
import { startReflector, type Reflector } from '../cache/reflector.js';
import type { EndpointSpec, Upstream } from '../upstream/client.js';
import { errorText } from '../upstream/errors.js';
import { requestJSON } from '../upstream/forward.js';
import type { MemberSpec } from './member.js';
import { memberEvents, memberFingerprint, type MemberProblem, type MemberRegistry } from './registry.js';

export const KARMADA_CLUSTERS_PATH = '/apis/cluster.karmada.io/v1alpha1/clusters';

export interface KarmadaMembersOptions {
  log: Logger;
  /** How often the referenced secrets are read again (ms); 60 s by default. */
  resyncMs?: number;
  /** The registry's own traffic to the control plane (Cluster list/watch, secret reads); 10 qps, burst 20. */
  limiter?: RateLimiter;
  /** Retry policy for a Cluster that cannot be used yet; client-go's reflector backoff by default. */
  backoff?: () => Backoff;
}

interface ClusterRef {
  namespace?: string;
  name?: string;
}

interface KarmadaCluster extends KubeObject {
  spec?: {
    apiEndpoint?: string;
    secretRef?: ClusterRef;
    impersonatorSecretRef?: ClusterRef;
    insecureSkipTLSVerification?: boolean;
    proxyURL?: string;
  };
}

interface Entry {
  name: string;
  cluster: KarmadaCluster;
  /** What is published (list(), events); kept while a later read fails. */
  spec?: MemberSpec;
  problem?: { error: string; since: number };
  /** Bumped per resolution: only the newest one may publish. */
  generation: number;
  inflight: number;
  /** Tried at least once (for synced). */
  attempted: boolean;
  retry?: NodeJS.Timeout;
  backoff: Backoff;
}

/** Raised for a Cluster that cannot be used as it is; the message is what operators see. */
class ClusterUnusable extends Error {}

export function karmadaMembers(controlPlane: Upstream, opts: KarmadaMembersOptions): MemberRegistry {
  const log = opts.log.child({ component: 'karmada-members' });
  const resyncMs = opts.resyncMs ?? 60_000;
  const limiter = opts.limiter ?? tokenBucket(10, 20);
  const makeBackoff = opts.backoff ?? (() => newBackoff());
  const events = memberEvents(log);
  const entries = new Map<string, Entry>();
  let closed = false;

  const publish = (e: Entry, spec: MemberSpec) => {
    const prev = e.spec;
    e.spec = spec;
    if (!prev) {
      log.info({ member: e.name, server: spec.endpoint.url }, 'member cluster added');
      events.emit('added', spec);
    } else if (prev.fingerprint !== spec.fingerprint) {
      log.info({ member: e.name, server: spec.endpoint.url }, 'member cluster changed');
      events.emit('changed', spec);
    }
  };

  const report = (e: Entry, error: string) => {
    if (e.problem?.error !== error) {
      log.warn({ member: e.name, err: error, keeping: e.spec ? 'the last working settings' : undefined }, 'member cluster cannot be used');
      e.problem = { error, since: e.problem?.since ?? Date.now() };
    }
  };

  const resolve = async (e: Entry): Promise<void> => {
    const generation = ++e.generation;
    if (e.retry) clearTimeout(e.retry);
    e.retry = undefined;
    e.inflight++;
    try {
      const spec = await specFor(e.cluster);
      if (closed || entries.get(e.name) !== e || e.generation !== generation) return;
      if (e.problem) log.info({ member: e.name }, 'member cluster problem resolved');
      e.problem = undefined;
      e.backoff.reset();
      publish(e, spec);
    } catch (err) {
      if (closed || entries.get(e.name) !== e || e.generation !== generation) return;
      report(e, err instanceof ClusterUnusable ? err.message : `cluster ${e.name}: ${errorText(err)}`);
      e.retry = setTimeout(() => void resolve(e), e.backoff.next());
    } finally {
      e.inflight--;
      e.attempted = true;
    }
  };

  const specFor = async (c: KarmadaCluster): Promise<MemberSpec> => {
    const name = c.metadata.name ?? '';
    const spec = c.spec ?? {};
    const bad = (msg: string) => new ClusterUnusable(`cluster ${name}: ${msg}`);
    const nameErrs = isDNS1123Label(name);
    if (nameErrs.length > 0) throw bad(`the name cannot name a member: ${nameErrs.join(', ')}`);
    if (!spec.apiEndpoint) throw bad('spec.apiEndpoint is empty');
    let url: URL;
    try {
      url = new URL(spec.apiEndpoint);
    } catch {
      throw bad(`spec.apiEndpoint ${JSON.stringify(spec.apiEndpoint)} is not a URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw bad(`spec.apiEndpoint ${JSON.stringify(spec.apiEndpoint)} is not an https:// URL`);
    if (spec.proxyURL) throw bad('spec.proxyURL is set, and members behind a proxy are not supported');
    if (!spec.secretRef?.name || !spec.secretRef.namespace) throw bad('spec.secretRef is missing');
    const main = await readSecret(name, spec.secretRef, 'spec.secretRef');
    const token = main.token;
    if (!token) throw bad(`secret ${spec.secretRef.namespace}/${spec.secretRef.name} (spec.secretRef) has no data.token`);
    const endpoint: EndpointSpec = {
      name,
      url: spec.apiEndpoint,
      role: 'member cluster',
      caPem: main.caBundle || undefined,
      token,
      insecure: spec.insecureSkipTLSVerification === true,
    };
    let impersonator: EndpointSpec | undefined;
    const ref = spec.impersonatorSecretRef;
    if (ref?.name && ref.namespace) {
      // One secret named twice is read once: two reads could straddle its rotation and pair an old token with a new.
      const same = ref.name === spec.secretRef.name && ref.namespace === spec.secretRef.namespace;
      const imp = same ? main : await readSecret(name, ref, 'spec.impersonatorSecretRef');
      if (!imp.token) throw bad(`secret ${ref.namespace}/${ref.name} (spec.impersonatorSecretRef) has no data.token`);
      impersonator = { ...endpoint, token: imp.token };
    }
    return { name, source: 'karmada', endpoint, impersonator, fingerprint: memberFingerprint(endpoint, impersonator) };
  };

  const readSecret = async (cluster: string, ref: ClusterRef, field: string): Promise<{ token?: string; caBundle?: string }> => {
    await limiter.wait();
    const path = `/api/v1/namespaces/${encodeURIComponent(ref.namespace!)}/secrets/${encodeURIComponent(ref.name!)}`;
    const r = await requestJSON(controlPlane, 'GET', path);
    const where = `secret ${ref.namespace}/${ref.name} (${field})`;
    if (r.status === 404) throw new ClusterUnusable(`cluster ${cluster}: ${where} not found`);
    if (r.status !== 200) {
      const why = typeof r.body === 'object' && r.body?.message ? r.body.message : `HTTP ${r.status}`;
      throw new ClusterUnusable(`cluster ${cluster}: cannot read ${where}: ${why}`);
    }
    const data = (r.body?.data ?? {}) as Record<string, string>;
    const decode = (k: string) => (typeof data[k] === 'string' ? Buffer.from(data[k], 'base64').toString('utf8').trim() : undefined);
    return { token: decode('token'), caBundle: decode('caBundle') };
  };

  const upsert = (c: KarmadaCluster) => {
    const name = c.metadata.name ?? '';
    let e = entries.get(name);
    if (!e) {
      e = { name, cluster: c, generation: 0, inflight: 0, attempted: false, backoff: makeBackoff() };
      entries.set(name, e);
    } else {
      const same = JSON.stringify(e.cluster.spec) === JSON.stringify(c.spec);
      e.cluster = c;
      // Status updates (conditions, versions) change nothing about connecting; the resync re-reads the secrets.
      if (same && (e.spec || e.inflight > 0 || e.retry)) return;
    }
    void resolve(e);
  };

  const remove = (name: string) => {
    const e = entries.get(name);
    if (!e) return;
    entries.delete(name);
    if (e.retry) clearTimeout(e.retry);
    if (e.spec) {
      log.info({ member: name }, 'member cluster removed');
      events.emit('removed', e.spec);
    }
  };

  const reflector: Reflector = startReflector({
    upstream: controlPlane,
    path: KARMADA_CLUSTERS_PATH,
    limiter,
    log,
    sink: {
      replace(objects) {
        const names = new Set<string>();
        for (const o of objects) {
          const name = o.metadata.name ?? '';
          names.add(name);
          // Unchanged Clusters keep their entry; their secrets are looked at again by the resync.
          if (entries.get(name)?.cluster.metadata.resourceVersion !== o.metadata.resourceVersion) upsert(o as KarmadaCluster);
        }
        for (const name of [...entries.keys()]) if (!names.has(name)) remove(name);
      },
      apply(type, obj) {
        if (type === 'DELETED') remove(obj.metadata.name ?? '');
        else upsert(obj as KarmadaCluster);
      },
    },
  });

  const resync = setInterval(() => {
    for (const e of entries.values()) if (e.inflight === 0 && !e.retry) void resolve(e);
  }, resyncMs);
  resync.unref();

  return {
    list: () => [...entries.values()].flatMap((e) => (e.spec ? [e.spec] : [])),
    get: (name) => entries.get(name)?.spec,
    subscribe: events.subscribe,
    get synced() {
      if (!reflector.synced) return false;
      for (const e of entries.values()) if (!e.attempted) return false;
      return true;
    },
    problems(): MemberProblem[] {
      const out: MemberProblem[] = [];
      // Discovery itself failing (no Karmada CRD, no permission, control plane down) has no member name.
      if (reflector.stale && reflector.lastError) {
        out.push({ name: '', source: 'karmada', error: `listing Karmada clusters on the control plane: ${reflector.lastError}`, since: reflector.staleSince ?? Date.now() });
      }
      for (const e of entries.values()) if (e.problem) out.push({ name: e.name, source: 'karmada', error: e.problem.error, since: e.problem.since });
      return out;
    },
    async close() {
      closed = true;
      clearInterval(resync);
      for (const e of entries.values()) if (e.retry) clearTimeout(e.retry);
      await reflector.stop();
    },
  };
}
