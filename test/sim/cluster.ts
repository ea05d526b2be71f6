// One simulated cluster's state and write semantics: what a kube-apiserver's registry does on create, update,
// patch and delete (defaults, preconditions, status subresources, scale, finalizers, graceful pod deletion,
// namespace termination, CRD registration). The HTTP layer (server.ts), the fleet's seeding and the churn
// generator all go through these functions, so every write follows the same rules.

import { randomUUID } from 'node:crypto';
import { eventFields } from '../../src/api/fields.js';
import { eventsV1ToCore } from '../../src/api/eventconv.js';
import { nameValidatorFor, nowRfc3339, toRfc3339, validateObjectMeta, type KubeObject } from '../../src/api/meta.js';
import { applyPatch, type PatchType } from '../../src/api/patch.js';
import {
  fieldInvalid,
  newAlreadyExists,
  newBadRequest,
  newConflict,
  newForbidden,
  newInvalid,
  newNotFound,
  OPTIMISTIC_LOCK_ERROR,
} from '../../src/api/status.js';
import { metadataOf, newRvClock, objectOf, Store, type RvClock, type StoredObject } from '../../src/cache/store.js';
import type { SimResourceAccess } from './access.js';
import { builtinResources, resourcesFromCRD, type SimResource } from './registry.js';

export interface WriteOptions {
  dryRun?: boolean;
  subresource?: '' | 'status' | 'scale';
}

export interface DeleteOptions {
  dryRun?: boolean;
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

export interface ClusterOptions {
  /** Watch window per resource. */
  windowSize?: number;
  /**
   * A simulated kubelet finishes graceful pod deletions after this many ms (a real cluster without kubelets
   * leaves such pods Terminating forever); undefined disables it.
   */
  kubeletDeleteAfterMs?: number;
}

const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

export class SimCluster implements SimResourceAccess {
  readonly clock: RvClock = newRvClock(1);
  private readonly resources = new Map<string, SimResource>();
  private readonly stores = new Map<string, Store>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Bumped whenever the set of served resources changes, so discovery can be cached. */
  generation = 0;

  constructor(readonly name: string, readonly opts: ClusterOptions = {}) {
    for (const r of builtinResources()) this.register(r);
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
  }

  // ---- the resource table ----

  register(r: SimResource): void {
    this.resources.set(`${r.group}/${r.version}/${r.resource}`, r);
    if (!this.stores.has(r.storeName)) {
      const fieldsOf = r.mirrorOf ? (o: KubeObject) => eventFields(eventsV1ToCore(o)) : r.fieldsOf;
      const store = new Store({ clock: this.clock, windowSize: this.opts.windowSize, fieldsOf });
      this.stores.set(r.storeName, store);
      if (r.mirrorOf) this.mirror(this.stores.get(r.mirrorOf)!, store, r);
    }
    this.generation++;
  }

  private unregisterCRD(crd: KubeObject): void {
    for (const r of resourcesFromCRD(crd)) this.resources.delete(`${r.group}/${r.version}/${r.resource}`);
    this.stores.delete(`${(crd as any).spec.group}/${(crd as any).spec.names.plural}`);
    this.generation++;
  }

  private mirror(source: Store, target: Store, r: SimResource): void {
    source.subscribe((ev) => {
      if (ev.type === 'DELETED') target.remove(ev.object.key, ev.rv);
      else target.put(r.fromStored!(objectOf(ev.object)), ev.rv);
    });
  }

  resource(group: string, version: string, resource: string): SimResource | undefined {
    return this.resources.get(`${group}/${version}/${resource}`);
  }

  servesGroupVersion(group: string, version: string): boolean {
    for (const r of this.resources.values()) if (r.group === group && r.version === version) return true;
    return false;
  }

  allResources(): SimResource[] {
    return [...this.resources.values()];
  }

  store(r: SimResource): Store {
    return this.stores.get(r.storeName)!;
  }

  private find(group: string, resource: string): SimResource | undefined {
    for (const r of this.resources.values()) if (r.group === group && r.resource === resource && !r.mirrorOf) return r;
    return undefined;
  }

  /** Forgets every store's event window (see Store.compact): history starts now. */
  compact(): void {
    for (const s of this.stores.values()) s.compact();
  }

  // ---- SimResourceAccess ----

  list(group: string, resource: string, namespace?: string): KubeObject[] {
    const r = this.find(group, resource);
    if (!r) return [];
    const prefix = namespace ? `${namespace}/` : '';
    return [...this.store(r).snapshot().iterate(prefix, prefix)].map(objectOf);
  }

  get(group: string, resource: string, namespace: string, name: string): KubeObject | undefined {
    const r = this.find(group, resource);
    if (!r) return undefined;
    const stored = this.store(r).get(keyOf(r, namespace, name));
    return stored && objectOf(stored);
  }

  // ---- writes ----

  create(r: SimResource, namespace: string, body: unknown, opts: WriteOptions = {}): StoredObject {
    const obj = asObject(body, r);
    const meta = obj.metadata;
    if (r.namespaced) {
      if (meta.namespace && meta.namespace !== namespace) {
        throw newBadRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      meta.namespace = namespace;
    } else {
      delete meta.namespace;
    }
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomSuffix();
    const errs = validateObjectMeta(meta, r.namespaced, nameValidatorFor(r.group, r.resource));
    if (errs.length > 0) throw newInvalid({ group: r.group, kind: r.kind }, meta.name ?? '', errs);
    if (r.namespaced) this.requireNamespace(namespace, r);
    const store = this.writeStore(r);
    const name = meta.name!;
    if (store.get(keyOf(r, namespace, name))) throw newAlreadyExists(r, name);

    meta.uid = randomUUID();
    meta.creationTimestamp = nowRfc3339();
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (r.generation) meta.generation = 1;
    if (r.hasStatus && r.resource !== 'customresourcedefinitions') delete (obj as any).status;
    applyCreateDefaults(r, obj);
    if (opts.dryRun) return this.dryRunView(store, obj);
    const stored = this.writeStored(r, store, obj);
    if (r.resource === 'customresourcedefinitions' && r.group === 'apiextensions.k8s.io') this.establishCRD(objectOf(stored));
    return stored;
  }

  update(r: SimResource, namespace: string, name: string, body: unknown, opts: WriteOptions = {}): StoredObject {
    const store = this.writeStore(r);
    const current = store.get(keyOf(r, namespace, name));
    if (!current) throw newNotFound(r, name);
    const obj = asObject(body, r);
    if (obj.metadata.name && obj.metadata.name !== name) {
      throw newBadRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`);
    }
    if (r.namespaced && obj.metadata.namespace && obj.metadata.namespace !== namespace) {
      throw newBadRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const rv = obj.metadata.resourceVersion;
    if (!rv) {
      throw newInvalid({ group: r.group, kind: r.kind }, name, [fieldInvalid('metadata.resourceVersion', '0x0', 'must be specified for an update')]);
    }
    if (rv !== String(current.rv)) throw newConflict(r, name, OPTIMISTIC_LOCK_ERROR);
    return this.commitUpdate(r, store, current, obj, opts);
  }

  patch(r: SimResource, namespace: string, name: string, patchBody: string, type: PatchType, opts: WriteOptions = {}): StoredObject {
    const store = this.writeStore(r);
    const current = store.get(keyOf(r, namespace, name));
    if (!current) throw newNotFound(r, name);
    const base = r.toStored ? r.fromStored!(objectOf(current)) : objectOf(current);
    const patched = applyPatch(base, patchBody, type, r.schema) as KubeObject;
    if (!patched || typeof patched !== 'object' || !patched.metadata) throw newBadRequest('the patch produced an object without metadata');
    if (patched.metadata.resourceVersion && patched.metadata.resourceVersion !== String(current.rv)) {
      throw newConflict(r, name, OPTIMISTIC_LOCK_ERROR);
    }
    patched.metadata.name = name;
    return this.commitUpdate(r, store, current, patched, opts);
  }

  /** The rules every update shares, whether it came as PUT or PATCH, for the object or a subresource. */
  private commitUpdate(r: SimResource, store: Store, current: StoredObject, incoming: KubeObject, opts: WriteOptions): StoredObject {
    const obj = r.toStored ? r.toStored(incoming) : incoming;
    // Parsed anew from the stored bytes: this update owns it, so its parts move into next without a copy.
    const old = objectOf(current) as any;
    let next: any;
    if (opts.subresource === 'status') {
      // The status subresource changes status only.
      next = { ...old, status: (obj as any).status };
    } else {
      next = obj;
      next.apiVersion = old.apiVersion;
      next.kind = old.kind;
      const m = next.metadata;
      m.uid = old.metadata.uid;
      m.creationTimestamp = old.metadata.creationTimestamp;
      m.namespace = old.metadata.namespace;
      m.name = old.metadata.name;
      if (old.metadata.deletionTimestamp) {
        m.deletionTimestamp = old.metadata.deletionTimestamp;
        m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
      }
      if (r.hasStatus) next.status = old.status;
      if (old.metadata.generation !== undefined) {
        m.generation = old.metadata.generation;
        if (r.generation && JSON.stringify(next.spec) !== JSON.stringify(old.spec)) m.generation++;
      }
    }
    delete next.metadata.resourceVersion;
    if (opts.dryRun) return this.dryRunView(store, next);
    // Removing the last finalizer of an object being deleted completes the deletion.
    if (next.metadata.deletionTimestamp && !(next.metadata.finalizers?.length) && !this.gracefulPending(r, next)) {
      return store.remove(current.key)!;
    }
    const stored = this.writeStored(r, store, next);
    if (r.resource === 'customresourcedefinitions' && r.group === 'apiextensions.k8s.io') this.establishCRD(objectOf(stored));
    return stored;
  }

  /**
   * DELETE as the generic registry does it (k8s.io/apiserver rest.BeforeDelete and Store.Delete): pods always take
   * the graceful path (an update that sets deletionTimestamp, then, with a zero grace period, the removal), other
   * objects go at once unless finalizers hold them, and namespaces terminate their contents first.
   */
  delete(r: SimResource, namespace: string, name: string, opts: DeleteOptions = {}): StoredObject {
    const store = this.writeStore(r);
    const current = store.get(keyOf(r, namespace, name));
    if (!current) throw newNotFound(r, name);
    const pre = opts.preconditions;
    // BeforeDelete names the kind where a resource belongs; kept as the apiserver writes it.
    const byKind = { group: r.group, resource: r.kind };
    const obj = objectOf(current) as any;
    if (pre?.uid && pre.uid !== obj.metadata.uid) {
      throw newConflict(byKind, name, `the UID in the precondition (${pre.uid}) does not match the UID in record (${obj.metadata.uid}). The object might have been deleted and then recreated`);
    }
    if (pre?.resourceVersion && pre.resourceVersion !== String(current.rv)) {
      throw newConflict(byKind, name, `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${current.rv}). The object might have been modified`);
    }
    const meta = obj.metadata;
    const finalizers = meta.finalizers?.length > 0;
    const isNamespace = r.group === '' && r.resource === 'namespaces';
    const isPod = r.group === '' && r.resource === 'pods';
    const remove = () => (opts.dryRun ? current : store.remove(current.key)!);

    if (isNamespace) {
      if (meta.deletionTimestamp) return current;
      meta.deletionTimestamp = nowRfc3339();
      meta.deletionGracePeriodSeconds = 0;
      obj.status = { ...obj.status, phase: 'Terminating' };
      delete meta.resourceVersion;
      if (opts.dryRun) return this.dryRunView(store, obj);
      const stored = store.put(obj);
      this.later(0, () => this.finishNamespace(name));
      return stored;
    }

    if (!isPod) {
      if (!finalizers) return remove();
      if (meta.deletionTimestamp) return current;
      meta.deletionTimestamp = nowRfc3339();
      meta.deletionGracePeriodSeconds = 0;
      if (meta.generation > 0) meta.generation++;
      delete meta.resourceVersion;
      return opts.dryRun ? this.dryRunView(store, obj) : store.put(obj);
    }

    // Pods: the graceful path.
    let grace: number;
    if (meta.deletionTimestamp) {
      const existing = meta.deletionGracePeriodSeconds;
      if (existing === undefined || existing === 0) return finalizers ? current : remove();
      const requested = opts.gracePeriodSeconds;
      if (requested === undefined || requested >= existing) return current;
      grace = Math.max(0, requested);
      const shortened = Date.parse(meta.deletionTimestamp) - existing * 1000 + grace * 1000;
      meta.deletionTimestamp = toRfc3339(new Date(Math.max(shortened, Date.now())));
    } else {
      // Pods no node ever ran go at once, whatever the grace period asked for.
      grace = !obj.spec?.nodeName ? 0 : Math.max(0, opts.gracePeriodSeconds ?? obj.spec?.terminationGracePeriodSeconds ?? 30);
      meta.deletionTimestamp = toRfc3339(new Date(Date.now() + grace * 1000));
      if (meta.generation > 0) meta.generation++;
    }
    meta.deletionGracePeriodSeconds = grace;
    delete meta.resourceVersion;
    if (opts.dryRun) return this.dryRunView(store, obj);
    const marked = store.put(obj);
    if (grace === 0 && !finalizers) return store.remove(current.key)!;
    if (grace > 0 && !finalizers && this.opts.kubeletDeleteAfterMs !== undefined) {
      this.later(Math.min(grace * 1000, this.opts.kubeletDeleteAfterMs), () => {
        const still = store.get(current.key);
        const stillMeta = still && metadataOf(still);
        if (stillMeta && stillMeta.uid === meta.uid && !stillMeta.finalizers?.length) store.remove(current.key);
      });
    }
    return marked;
  }

  /** Deletes what matches; returns what was deleted (or marked for deletion). */
  deleteCollection(r: SimResource, namespace: string, match: (o: StoredObject) => boolean, opts: DeleteOptions = {}): StoredObject[] {
    const store = this.writeStore(r);
    const prefix = r.namespaced && namespace ? `${namespace}/` : '';
    const victims = [...store.snapshot().iterate(prefix, prefix)].filter(match);
    return victims.map((o) => this.delete(r, o.namespace, o.name, opts));
  }

  /**
   * Stores a complete object, status included, as if it had always been there (what restoring etcd would do):
   * for seeding large fleets without the create-then-status round trip. Defaults are filled as on create.
   */
  load(r: SimResource, obj: KubeObject): StoredObject {
    const meta = obj.metadata;
    meta.uid ??= randomUUID();
    meta.creationTimestamp ??= nowRfc3339();
    if (r.generation) meta.generation ??= 1;
    obj.apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
    obj.kind = r.kind;
    const status = (obj as any).status;
    applyCreateDefaults(r, obj);
    if (status !== undefined) (obj as any).status = status;
    return this.writeStored(r, this.writeStore(r), obj);
  }

  /** The resource that stores group/resource (not a mirror). */
  resourceFor(group: string, resource: string): SimResource | undefined {
    return this.find(group, resource);
  }

  // ---- helpers ----

  private writeStore(r: SimResource): Store {
    return this.stores.get(r.mirrorOf ?? r.storeName)!;
  }

  private writeStored(r: SimResource, store: Store, obj: KubeObject): StoredObject {
    const stored = store.put(obj);
    if (!r.mirrorOf) return stored;
    // The caller asked in the mirror's version: answer with the mirror's view of the same write.
    return this.stores.get(r.storeName)!.get(stored.key)!;
  }

  private dryRunView(store: Store, obj: KubeObject): StoredObject {
    // Nothing is stored: the answer carries the current version, as a dry run does not advance it.
    return store.seal(obj, store.clock.current());
  }

  private gracefulPending(r: SimResource, obj: any): boolean {
    return r.group === '' && r.resource === 'pods' && (obj.metadata.deletionGracePeriodSeconds ?? 0) > 0;
  }

  private requireNamespace(namespace: string, r: SimResource): void {
    const ns = this.get('', 'namespaces', '', namespace) as any;
    if (!ns) throw newNotFound({ group: '', resource: 'namespaces' }, namespace);
    if (ns.metadata.deletionTimestamp || ns.status?.phase === 'Terminating') {
      throw newForbidden(r, '', `unable to create new content in namespace ${namespace} because it is being terminated`);
    }
  }

  private finishNamespace(name: string): void {
    for (const r of this.resources.values()) {
      if (!r.namespaced || r.mirrorOf) continue;
      const store = this.stores.get(r.storeName);
      if (!store) continue;
      for (const o of [...store.snapshot().iterate(`${name}/`, `${name}/`)]) store.remove(o.key);
    }
    const nsStore = this.stores.get('/namespaces')!;
    nsStore.remove(name);
  }

  private establishCRD(crd: KubeObject): void {
    const c = crd as any;
    const existing = c.status?.conditions?.find((x: any) => x.type === 'Established');
    for (const r of resourcesFromCRD(crd)) this.register(r);
    if (existing) return;
    const now = nowRfc3339();
    const status = {
      conditions: [
        { type: 'NamesAccepted', status: 'True', lastTransitionTime: now, reason: 'NoConflicts', message: 'no conflicts found' },
        { type: 'Established', status: 'True', lastTransitionTime: now, reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
      ],
      acceptedNames: c.spec.names,
      storedVersions: c.spec.versions.filter((v: any) => v.storage).map((v: any) => v.name),
    };
    const store = this.stores.get('apiextensions.k8s.io/customresourcedefinitions')!;
    const next = structuredClone(crd) as any;
    next.status = status;
    delete next.metadata.resourceVersion;
    store.put(next);
  }

  /** Called when a CRD is finally removed. */
  removeCRD(crd: KubeObject): void {
    this.unregisterCRD(crd);
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }
}

export function keyOf(r: { namespaced: boolean }, namespace: string, name: string): string {
  return r.namespaced ? `${namespace}/${name}` : name;
}

function randomSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += NAME_CHARS[Math.floor(Math.random() * NAME_CHARS.length)];
  return s;
}

function asObject(body: unknown, r: SimResource): KubeObject {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw newBadRequest(`the object provided is unrecognized (must be of type ${r.kind})`);
  }
  const obj = body as KubeObject;
  if (obj.kind && obj.kind !== r.kind) {
    throw newBadRequest(`the object provided is unrecognized (must be of type ${r.kind}): ${obj.kind}`);
  }
  obj.metadata ??= {};
  if (typeof obj.metadata !== 'object') throw newBadRequest('metadata must be an object');
  obj.apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
  obj.kind = r.kind;
  return obj;
}

/** The defaults the apiserver fills in on create that tests and printers look at. */
function applyCreateDefaults(r: SimResource, obj: any): void {
  if (r.group === '' && r.resource === 'pods') {
    const spec = (obj.spec ??= {});
    spec.restartPolicy ??= 'Always';
    spec.terminationGracePeriodSeconds ??= 30;
    spec.dnsPolicy ??= 'ClusterFirst';
    spec.schedulerName ??= 'default-scheduler';
    spec.securityContext ??= {};
    spec.enableServiceLinks ??= true;
    spec.preemptionPolicy ??= 'PreemptLowerPriority';
    spec.priority ??= 0;
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
      c.terminationMessagePath ??= '/dev/termination-log';
      c.terminationMessagePolicy ??= 'File';
      c.imagePullPolicy ??= c.image?.endsWith(':latest') || !c.image?.includes(':') ? 'Always' : 'IfNotPresent';
      c.resources ??= {};
    }
    obj.status = { phase: 'Pending', qosClass: 'BestEffort' };
  } else if (r.group === '' && r.resource === 'namespaces') {
    obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name };
    obj.spec = { finalizers: ['kubernetes'], ...obj.spec };
    obj.status = { phase: 'Active' };
  } else if (r.group === 'apps' && r.resource === 'deployments') {
    const spec = (obj.spec ??= {});
    spec.replicas ??= 1;
    spec.revisionHistoryLimit ??= 10;
    spec.progressDeadlineSeconds ??= 600;
    spec.strategy ??= { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } };
    obj.status = {};
  } else if (r.group === '' && r.resource === 'secrets') {
    obj.type ??= 'Opaque';
  }
}
