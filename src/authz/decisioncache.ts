// Caching of SubjectAccessReview decisions, as kube-apiserver's webhook authorizer caches them
// (k8s.io/apiserver/plugin/pkg/authorizer/webhook): keyed by everything the review asks (the whole spec), allowed
// and denied decisions kept for different times (a denial should not outlive a fresh RoleBinding for long),
// failed reviews never kept, and requests whose caller-controlled attributes are huge not cached at all so they
// cannot flush the cache. Concurrent identical reviews share one request.

import { LRUCache } from 'lru-cache';
import { isDeepFrozen, type Attributes, type Decision } from '../api/user.js';

export type SubjectAccessReviewer = (attrs: Attributes) => Promise<Decision>;

export interface DecisionCacheOptions {
  /** Entries kept at most; the least recently used go first. 0 (cachingReviewer, perCluster): no cache. */
  maxEntries: number;
  /** How long an allowed decision is reused (kube: --authorization-webhook-cache-authorized-ttl, 5m); 0: not cached. */
  allowedTTLms: number;
  /** How long a denied decision is reused (kube: --authorization-webhook-cache-unauthorized-ttl, 30s); 0: not cached. */
  deniedTTLms: number;
  /** Tests: the clock TTLs are measured with (ms, monotonic). */
  now?: () => number;
}

/** kube's defaults: an LRU of 8192 decisions, 5 minutes for allowed, 30 seconds for denied. */
export const DECISION_CACHE_DEFAULTS: Readonly<DecisionCacheOptions> = Object.freeze({
  maxEntries: 8192,
  allowedTTLms: 5 * 60_000,
  deniedTTLms: 30_000,
});

// The webhook authorizer's maxControlledAttrCacheSize.
const MAX_CONTROLLED_ATTR_SIZE = 10_000;

export interface DecisionCache {
  /** A decision still fresh for key, or undefined. */
  peek(key: string): Decision | undefined;
  /** The cached decision for key or, failing that, sar's, remembered for its TTL (errors are not remembered). */
  review(key: string, attrs: Attributes, sar: SubjectAccessReviewer): Promise<Decision>;
  readonly size: number;
}

export function newDecisionCache(o: DecisionCacheOptions): DecisionCache {
  validate(o);
  const clock = o.now;
  const lru = new LRUCache<string, Decision>({
    max: o.maxEntries,
    // lru-cache reads a start time of 0 as "no TTL"; a test clock may well start there.
    ...(clock ? { perf: { now: () => clock() + 1 }, ttlResolution: 0 } : {}),
  });
  const inflight = new Map<string, Promise<Decision>>();
  return {
    peek: (key) => lru.get(key),
    review(key, attrs, sar) {
      const hit = lru.get(key);
      if (hit) return Promise.resolve(hit);
      const pending = inflight.get(key);
      if (pending) return pending;
      const p = sar(attrs).then(
        (d) => {
          inflight.delete(key);
          // A TTL of 0 means "do not cache" here; to lru-cache it would mean "forever".
          const ttl = d.allowed ? o.allowedTTLms : o.deniedTTLms;
          if (ttl > 0 && shouldCache(attrs)) lru.set(key, d, { ttl });
          return d;
        },
        (e: unknown) => {
          inflight.delete(key);
          throw e;
        },
      );
      inflight.set(key, p);
      return p;
    },
    get size() {
      return lru.size;
    },
  };
}

/** A reviewer that asks sar only when no fresh decision for the same attributes is cached. */
export function cachingReviewer(sar: SubjectAccessReviewer, o: Partial<DecisionCacheOptions> = {}): SubjectAccessReviewer {
  const cache = decisionCacheFor(o);
  if (!cache) return sar;
  return (attrs) => cache.review(decisionKey(attrs), attrs, sar);
}

/** The cache o asks for (defaults filled in), or undefined for maxEntries 0: no caching at all. */
export function decisionCacheFor(o: Partial<DecisionCacheOptions>): DecisionCache | undefined {
  if (o.maxEntries === 0) return undefined;
  return newDecisionCache({ ...DECISION_CACHE_DEFAULTS, ...o });
}

/**
 * Everything a SubjectAccessReview spec carries for attrs: user name, uid, groups (in order, as sent), extra (keys
 * sorted, as Go marshals a map), and the resource or non-resource attributes. JSON, so no value can run into
 * another.
 */
export function decisionKey(attrs: Attributes): string {
  const request = attrs.isResourceRequest
    ? ['r', attrs.verb, attrs.apiGroup, attrs.apiVersion, attrs.resource, attrs.subresource, attrs.namespace, attrs.name, attrs.fieldSelector ?? null, attrs.labelSelector ?? null]
    : ['n', attrs.verb, attrs.path];
  // JSON has no raw newline, so the two halves cannot run into each other.
  return userKey(attrs.user) + '\n' + JSON.stringify(request);
}

// Authenticators hand out one deep-frozen UserInfo per connection or token (src/authn/group.ts): its half of the
// key is made once, not per request (its credential-id alone is ~80 bytes).
const userKeys = new WeakMap<object, string>();

function userKey(u: Attributes['user']): string {
  const known = userKeys.get(u);
  if (known !== undefined) return known;
  let extra: Array<[string, readonly string[]]> | undefined;
  if (u.extra) {
    const keys = Object.keys(u.extra);
    if (keys.length > 0) extra = keys.sort().map((k) => [k, u.extra![k]!]);
  }
  const key = JSON.stringify([u.username, u.uid ?? '', u.groups, extra ?? null]);
  if (isDeepFrozen(u)) userKeys.set(u, key);
  return key;
}

function shouldCache(a: Attributes): boolean {
  const size = a.namespace.length + a.verb.length + a.apiGroup.length + a.apiVersion.length + a.resource.length +
    a.subresource.length + a.name.length + a.path.length;
  return size < MAX_CONTROLLED_ATTR_SIZE;
}

function validate(o: DecisionCacheOptions): void {
  if (!Number.isInteger(o.maxEntries) || o.maxEntries < 1) throw new Error(`authorization cache: maxEntries must be a positive integer, not ${o.maxEntries}`);
  for (const k of ['allowedTTLms', 'deniedTTLms'] as const) {
    if (!Number.isFinite(o[k]) || o[k] < 0) throw new Error(`authorization cache: ${k} must be a non-negative number of milliseconds, not ${o[k]}`);
  }
}
