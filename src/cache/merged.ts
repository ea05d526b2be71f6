// The merged cache: the pods and events of every member cluster in one set of Stores, as if one cluster held
// them all. Each object carries its cluster as the label fleetgate.io/cluster and is keyed
// "namespace/name\0cluster", so the same name can exist once per member and lists still come in namespace/name
// order. All objects share one resourceVersion space issued here, starting at a random base per process: a
// resourceVersion or continue token from another replica or an earlier process falls outside
// [base, current] and is answered with 410, never with a silently wrong stream. The member's own
// resourceVersion is remembered per object so writes can be translated back.

import { randomBytes } from 'node:crypto';
import { eventFields, podFields } from '../api/fields.js';
import type { KubeObject } from '../api/meta.js';
import { goQuote, StatusError } from '../api/status.js';
import { CLUSTER_LABEL, encodeListBytes, encodeObjects, encodePodBytes, releasePage, servedJSON, type CachedResource, type EncodedPage, type IntakeTransform, type Unchanged } from './intake.js';
import type { ListIntake, ReflectorSink } from './reflector.js';
import { Store, type RvClock, type StoredObject } from './store.js';

export type { CachedResource, IntakeTransform, ListIntake, ReflectorSink };
export { CLUSTER_LABEL };

/** A list into a member's sink, which also takes pages serialized elsewhere (src/cache/intake.ts). */
export interface MemberListIntake extends ListIntake {
  /** Takes the page: its bytes are reused for a later page once its objects are stored. */
  addEncoded(page: EncodedPage): void;
}

/** A member's sink: lists page by page for its reflector, and whole (replace) for callers that have them whole. */
export interface MemberSink extends ReflectorSink {
  startList(): MemberListIntake;
  /** What an intake worker does to this sink's objects before addEncoded. */
  readonly transform: IntakeTransform;
  /** A list page's bytes made into its page here on the main thread, leaving out the versions the cache holds. */
  encodePage(bytes: Buffer): EncodedPage;
  replace(objects: KubeObject[], listRV: string): void;
  progress(rv: string): void;
}

export interface MergedCacheOptions {
  /** Identifies this process in continue tokens; another instance's tokens get 410. */
  instanceID: string;
  /** Events kept per store for resuming watches and paging lists at older versions. */
  windowSize: number;
  dropManagedFields: boolean;
  /** The first resourceVersion; random when absent (tests pin it to play another replica or process). */
  rvBase?: number;
}

/** The member a cached object belongs to, and the member's own resourceVersion for it. */
export interface Owner {
  cluster: string;
  stored: StoredObject;
  memberRV: string;
}

/**
 * A member's resourceVersion as the cache keeps it for each of its objects: a number when it is a plain decimal of
 * up to 15 digits, as etcd's revisions are, else the string. A string read from a member's bytes is a string of its
 * own per cached pod (~32 bytes and one more object for every full collection to visit); a number below 2^30 is
 * held in the map itself, and a larger one takes 16 bytes.
 */
type HeldRV = string | number;

function heldRV(memberRV: string): HeldRV {
  const n = memberRV.length;
  if (n === 0 || n > 15 || (n > 1 && memberRV.charCodeAt(0) === 0x30)) return memberRV;
  for (let i = 0; i < n; i++) {
    const c = memberRV.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return memberRV;
  }
  return Number(memberRV);
}

/** The member's resourceVersion held for key, as the member wrote it. */
function memberRVOf(memberRVs: Map<string, HeldRV>, key: string): string | undefined {
  const v = memberRVs.get(key);
  return typeof v === 'number' ? String(v) : v;
}

/** One member's share of the cache: its keys with the member's resourceVersion of each. */
interface MemberState {
  removed: boolean;
  memberRVs: Record<CachedResource, Map<string, HeldRV>>;
  /** The member's resourceVersion last seen per resource (objects, lists and bookmarks). */
  lastSeen: Record<CachedResource, string>;
}

// Random bases span 2^51 so two processes' ranges practically never overlap; the 2^52 left below
// Number.MAX_SAFE_INTEGER is room for ~4.5e15 changes.
const BASE_MIN = 2 ** 40;
const BASE_SPAN = 2n ** 51n;

export function randomRVBase(): number {
  return BASE_MIN + Number(randomBytes(8).readBigUInt64BE() % BASE_SPAN);
}

export class MergedCache {
  readonly clock: RvClock;
  readonly rvBase: number;
  readonly instanceID: string;
  readonly pods: Store;
  readonly events: Store;
  /** events.k8s.io/v1 views of `events`, under the same keys and resourceVersions. */
  readonly eventsV1: Store;
  private readonly dropManagedFields: boolean;
  private readonly members = new Map<string, MemberState>();
  /** Members' lists of pods under way (listStarted). */
  private podLists = 0;

  constructor(opts: MergedCacheOptions) {
    this.instanceID = opts.instanceID;
    this.rvBase = opts.rvBase ?? randomRVBase();
    let rv = this.rvBase;
    this.clock = { current: () => rv, next: () => ++rv };
    this.dropManagedFields = opts.dropManagedFields;
    const common = { clock: this.clock, windowSize: opts.windowSize, keyOf: mergedKeyOf };
    // kube-apiserver indexes pods by spec.nodeName; labels too here, for -l across a fleet (selectorindex.ts).
    this.pods = new Store({ ...common, fieldsOf: podFields, index: { fields: ['spec.nodeName'], labels: true } });
    this.events = new Store({ ...common, fieldsOf: eventFields });
    this.eventsV1 = new Store({ ...common, fieldsOf: eventFields });
  }

  /**
   * The sink a member's reflector for `resource` writes to; objects handed to it become the cache's. A sink of a
   * removed member ignores everything, a list under way included.
   *
   * A list's pages are stored as they come (open watches see each object's newer version, or nothing when the
   * member's version is the one cached); what the member no longer has is deleted only when the list ends
   * complete, and lastMemberRV moves only then.
   */
  sink(cluster: string, resource: CachedResource): MemberSink {
    const state = this.memberState(cluster);
    const memberRVs = state.memberRVs[resource];
    const transform: IntakeTransform = { cluster, resource, dropManagedFields: this.dropManagedFields };
    const unchanged = this.unchangedIn(cluster, memberRVs);
    // A deletion needs only the pod's key and version: read as if held, its bytes are not copied.
    const held: Unchanged = () => true;
    const startList = (): MemberListIntake => {
      // The keys this list has named; the store's own strings, so the set costs a slot per key.
      let seen: Set<string> | undefined = new Set<string>();
      const listDone = this.listStarted(resource);
      const addEncoded = (page: EncodedPage) => {
        if (state.removed || !seen) return;
        for (let i = 0; i < page.count; i++) seen.add(this.upsert(cluster, resource, memberRVs, page, i));
        releasePage(page);
      };
      return {
        add: (objects: KubeObject[]) => {
          if (state.removed || !seen) return;
          addEncoded(encodeObjects(objects, transform, 0, unchanged));
        },
        addEncoded,
        end: (listRV) => {
          const named = seen;
          seen = undefined;
          try {
            if (state.removed || !named) return;
            for (const key of memberRVs.keys()) {
              if (!named.has(key)) this.removeKey(resource, memberRVs, key);
            }
            state.lastSeen[resource] = listRV;
          } finally {
            // Also when the end failed: the reflector neither ends nor abandons a list twice.
            listDone();
          }
        },
        abort: () => {
          seen = undefined;
          listDone();
        },
      };
    };
    return {
      transform,
      encodePage: (bytes) => encodeListBytes(bytes, transform, 0, unchanged),
      startList,
      replace: (objects, listRV) => {
        const intake = startList();
        intake.add(objects);
        intake.end(listRV);
      },
      apply: (type, obj) => {
        if (state.removed) return;
        const memberRV = obj?.metadata?.resourceVersion;
        if (type === 'DELETED') {
          const key = keyOfMember(obj, cluster);
          if (key !== undefined) this.removeKey(resource, memberRVs, key);
        } else {
          const page = encodeObjects([obj], transform, 0, unchanged);
          if (page.count === 1) this.upsert(cluster, resource, memberRVs, page, 0);
          releasePage(page);
        }
        if (memberRV) state.lastSeen[resource] = memberRV;
      },
      // Pods' changes as their bytes, stored as apply stores them; events (two views) are parsed.
      applyBytes:
        resource !== 'pods'
          ? undefined
          : (type, bytes, start, end) => {
              if (state.removed) return undefined;
              const page = encodePodBytes(bytes, start, end, transform, type === 'DELETED' ? held : unchanged);
              if (!page) return undefined;
              const memberRV = page.memberRVs[0]!;
              if (type === 'DELETED') this.removeKey(resource, memberRVs, memberKey(page.namespaces[0]!, page.names[0]!, cluster));
              else this.upsert(cluster, resource, memberRVs, page, 0);
              releasePage(page);
              if (memberRV) state.lastSeen[resource] = memberRV;
              return memberRV;
            },
      progress: (rv) => {
        if (!state.removed) state.lastSeen[resource] = rv;
      },
    };
  }

  /**
   * A member's list of the resource has begun; the function returned says it ended or was given up (once counts).
   * While the pods store fills from empty, by the members' first lists at start, its selector index waits: it is
   * built in one pass in key order once no list is under way (Store.buildIndex), instead of taking each pod's key
   * into several postings at random places as the members' pages interleave.
   */
  private listStarted(resource: CachedResource): () => void {
    if (resource !== 'pods') return () => {};
    if (this.podLists++ === 0 && this.pods.size === 0) this.pods.deferIndex();
    // Lists write new slabs quickly: have the next ones made resident meanwhile (arena.ts).
    this.pods.arena.asksAhead = true;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--this.podLists === 0) {
        this.pods.arena.asksAhead = false;
        void this.pods.buildIndex();
      }
    };
  }

  /**
   * Deletes every object of the member (open watches see DELETED for each) and forgets it at once: its sinks
   * go quiet and a new sink starts afresh. Each DELETED is serialized anew, so a big member is removed in
   * batches that let other requests run in between; the promise resolves when the last one is out.
   */
  removeCluster(cluster: string): Promise<void> {
    const state = this.members.get(cluster);
    if (!state) return Promise.resolve();
    state.removed = true;
    this.members.delete(cluster);
    const pending = (['pods', 'events'] as const).map((resource) => ({ resource, keys: state.memberRVs[resource].keys() }));
    const step = (): boolean => {
      let n = 0;
      for (const { resource, keys } of pending) {
        for (let k = keys.next(); !k.done; k = keys.next()) {
          // The member may have been added again meanwhile: what its new state holds is no longer ours to delete.
          if (this.members.get(cluster)?.memberRVs[resource].has(k.value)) continue;
          this.removeKey(resource, state.memberRVs[resource], k.value);
          if (++n >= REMOVE_BATCH) return false;
        }
      }
      return true;
    };
    if (step()) return Promise.resolve();
    return new Promise((resolve) => {
      const next = () => (step() ? resolve() : setImmediate(next));
      setImmediate(next);
    });
  }

  /** Members with a sink or objects in the cache. */
  clusters(): string[] {
    return [...this.members.keys()];
  }

  /** Objects cached from the member, per resource (for /readyz?verbose and metrics). */
  objectCounts(cluster: string): Record<CachedResource, number> {
    const state = this.members.get(cluster);
    return { pods: state?.memberRVs.pods.size ?? 0, events: state?.memberRVs.events.size ?? 0 };
  }

  /** The member's resourceVersion last seen for the resource, '' before the first list. */
  lastMemberRV(cluster: string, resource: CachedResource): string {
    return this.members.get(cluster)?.lastSeen[resource] ?? '';
  }

  storeOf(resource: CachedResource): Store {
    return resource === 'pods' ? this.pods : this.events;
  }

  /** Every member's object named namespace/name, in cluster order. */
  owners(resource: CachedResource, namespace: string, name: string): Owner[] {
    const prefix = `${namespace}/${name}\u0000`;
    const out: Owner[] = [];
    for (const stored of this.storeOf(resource).snapshot().iterate(prefix, prefix)) {
      const cluster = stored.key.slice(prefix.length);
      const memberRVs = this.members.get(cluster)?.memberRVs[resource];
      const memberRV = (memberRVs && memberRVOf(memberRVs, stored.key)) ?? '';
      out.push({ cluster, stored, memberRV });
    }
    return out;
  }

  /**
   * The member's resourceVersion for a gateway resourceVersion a client sent with a write; undefined when the
   * client's version is not the cached current one (stale: the write gets 409 Conflict as upstream would say).
   */
  toMemberRV(resource: CachedResource, namespace: string, name: string, cluster: string, gatewayRV: string): string | undefined {
    const key = memberKey(namespace, name, cluster);
    const stored = this.storeOf(resource).get(key);
    if (!stored || String(stored.rv) !== gatewayRV) return undefined;
    const memberRVs = this.members.get(cluster)?.memberRVs[resource];
    return memberRVs && memberRVOf(memberRVs, key);
  }

  /** The gateway resourceVersion of a member's object version, when the cache holds exactly that version. */
  toGatewayRV(resource: CachedResource, namespace: string, name: string, cluster: string, memberRV: string): string | undefined {
    const key = memberKey(namespace, name, cluster);
    if (this.members.get(cluster)?.memberRVs[resource].get(key) !== heldRV(memberRV)) return undefined;
    const stored = this.storeOf(resource).get(key);
    return stored ? String(stored.rv) : undefined;
  }

  /** Whether this process issued rv ("" and "0" are not versions and are not ours). */
  isOurRV(rv: string): boolean {
    if (rv.length === 0 || rv.length > 16 || !DIGITS.test(rv)) return false;
    const n = Number(rv);
    return n >= this.rvBase && n <= this.clock.current();
  }

  private memberState(cluster: string): MemberState {
    let state = this.members.get(cluster);
    if (!state) {
      state = { removed: false, memberRVs: { pods: new Map(), events: new Map() }, lastSeen: { pods: '', events: '' } };
      this.members.set(cluster, state);
    }
    return state;
  }

  /** Whether the cache holds that version of the member's object: encoding it again would be wasted. */
  private unchangedIn(cluster: string, memberRVs: Map<string, HeldRV>): Unchanged {
    return (namespace, name, memberRV) => memberRV !== '' && memberRVs.get(memberKey(namespace, name, cluster)) === heldRV(memberRV);
  }

  /** Stores the page's object i unless the cache already has that version; returns its key. */
  private upsert(cluster: string, resource: CachedResource, memberRVs: Map<string, HeldRV>, page: EncodedPage, i: number): string {
    const key = memberKey(page.namespaces[i], page.names[i], cluster);
    const memberRV = page.memberRVs[i];
    const s = i * page.stride;
    // Left unserialized when it was encoded: the cache held that version then, and nothing has changed it since.
    if (page.offsets[s] === page.offsets[s + 3]) return key;
    const held = heldRV(memberRV);
    if (memberRV !== '' && memberRVs.get(key) === held) return key;
    const rv = this.clock.next();
    const digits = String(rv);
    const namespace = page.namespaces[i];
    const name = page.names[i];
    const labels = page.labels[i];
    const store = resource === 'pods' ? this.pods : this.events;
    const stored = store.putEncoded({ key, namespace, name, json: servedJSON(page, i, 0, digits, store.arena), labels, fields: page.fields[i] }, rv);
    // The v1 view shares metadata (same resourceVersion).
    if (resource === 'events') this.eventsV1.putEncoded({ key: stored.key, namespace, name, json: servedJSON(page, i, 1, digits, this.eventsV1.arena), labels, fields: page.v1Fields[i] }, rv);
    // The store's copy of the key, not an equal one: one string per object, whoever holds it.
    memberRVs.set(stored.key, held);
    return stored.key;
  }

  private removeKey(resource: CachedResource, memberRVs: Map<string, HeldRV>, key: string): void {
    memberRVs.delete(key);
    if (resource === 'pods') {
      this.pods.remove(key);
    } else {
      const last = this.events.remove(key);
      if (last) this.eventsV1.remove(key, last.rv);
    }
  }
}

const DIGITS = /^[0-9]+$/;
/** Deletions per turn of the event loop when a member is removed (~100 ms of serialization for big pods). */
const REMOVE_BATCH = 1000;

export function memberKey(namespace: string, name: string, cluster: string): string {
  return `${namespace}/${name}\u0000${cluster}`;
}

function mergedKeyOf(obj: KubeObject, namespace: string, name: string): string {
  return memberKey(namespace, name, obj.metadata.labels?.[CLUSTER_LABEL] ?? '');
}

function keyOfMember(obj: KubeObject, cluster: string): string | undefined {
  const meta = obj?.metadata;
  if (!meta?.name) return undefined;
  return memberKey(meta.namespace ?? '', meta.name, cluster);
}

/** The member cluster of a served object. */
export function clusterOf(obj: { metadata?: { labels?: Record<string, string> } }): string {
  return obj?.metadata?.labels?.[CLUSTER_LABEL] ?? '';
}

/**
 * 409 for a name that several member clusters hold: the request cannot tell which one is meant. Names the
 * clusters and both ways to pick one. Writes (src/members/route.ts) answer the same.
 */
export function newAmbiguousError(gr: { group: string; resource: string }, name: string, clusters: readonly string[]): StatusError {
  const what = gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
  const message =
    `${what} ${goQuote(name)} is ambiguous: it exists in member clusters ${clusters.join(', ')}; ` +
    `select one with the label selector ${CLUSTER_LABEL}=<cluster> (e.g. -l ${CLUSTER_LABEL}=${clusters[0]} ` +
    `--field-selector metadata.name=${name}) or address it through /clusters/<cluster>/`;
  const details: Record<string, string> = { name, kind: gr.resource };
  if (gr.group) details.group = gr.group;
  return new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: 'Conflict', details, code: 409 });
}
