// The admission step: for writes that deletion or scale-down protection covers, it reads what the write would
// touch (as the caller), and either lets the write go on, refuses it with a 403 that names the rule and the way
// out, or — for a member of a break-glass group — lets it go and records the bypass in the audit event. Reads
// pass with a verb comparison and, for lists, one header lookup.

import { goQuote, newInternalError, type GroupResource } from '../api/status.js';
import type { UserInfo } from '../api/user.js';
import { checkBodySyntax, readBody } from '../request/body.js';
import type { Step } from '../server/chain.js';
import type { RequestContext } from '../server/context.js';
import type { Upstream } from '../upstream/client.js';
import { errorText } from '../upstream/errors.js';
import { checkCollectionDeletion, checkNamespaceDeletion, checkObjectDeletion, type DeletionSettings } from './deletion.js';
import { annotationKey, refusal, type Outcome, type RuleName } from './finding.js';
import { compileRules, scaleLimitFor, type AdmissionRules, type CompiledRules, type ScaleLimit } from './rules.js';
import { checkScaleDown } from './scaledown.js';

export interface AdmissionOptions {
  /**
   * Where the request will be sent, as routing will send it: the control plane for federated resources, the member
   * for pods. undefined when the gateway will not forward it (not exposed, answered by the gateway itself): then
   * there is nothing to protect. Several upstreams when the write goes to each of them: every one is checked.
   */
  upstreamFor(ctx: RequestContext): Upstream | readonly AdmissionTarget[] | undefined;
  rules: AdmissionRules;
  /** Members of these groups may bypass both protections; each bypass is written to the audit event. */
  breakGlassGroups: readonly string[];
  /** Adds an annotation to the request's audit event. */
  audit(ctx: RequestContext, key: string, value: string): void;
  /** The server's request body limit (bodies of checked writes are read here, then reused by routing). Default 3 MiB. */
  maxRequestBodyBytes?: number;
  /** How long the upstream's namespaced resources are reused for namespace deletion checks. Default 60s. */
  discoveryTtlSeconds?: number;
  /** Time for the checks of a request without a deadline. Default 30s. */
  checkTimeoutMs?: number;
}

/**
 * One of several upstreams a write goes to, with the list a collection is read with there when routing sends
 * the request otherwise than as it came (members: the fleetgate.io/cluster requirements pick them and are not
 * sent; a LIST the cache answers has its own continue tokens and resourceVersions, which mean nothing to members).
 */
export type AdmissionTarget = Upstream | { upstream: Upstream; listOptions: URLSearchParams };

/** What a request needs checked; ScaleLimit for writes of a guarded workload or its scale. */
type Check = 'object' | 'namespace' | 'eviction' | 'collection' | ScaleLimit;

const KUBECTL_DELETE = 'kubectl delete';
const DEFAULT_BODY_LIMIT = 3 * 1024 * 1024;

export function admissionStep(o: AdmissionOptions): Step {
  const rules = compileRules(o.rules);
  const deletion: DeletionSettings = { rules: rules.deletion, discoveryTtlMs: (o.discoveryTtlSeconds ?? 60) * 1000 };
  const breakGlass = new Set(o.breakGlassGroups);
  const groups = [...o.breakGlassGroups];
  const bodyLimit = o.maxRequestBodyBytes ?? DEFAULT_BODY_LIMIT;
  const checkTimeoutMs = o.checkTimeoutMs ?? 30_000;

  return async (ctx, next) => {
    if (!ctx.info.isResourceRequest || ctx.upgrade !== undefined) return next();
    const check = checkFor(ctx, rules);
    if (check === undefined) return next();
    const target = o.upstreamFor(ctx);
    if (target === undefined) return next();
    const user = ctx.user;
    if (!user) throw newInternalError('admission: the request has no authenticated user');
    const rule: RuleName = typeof check === 'string' ? 'deletion-protection' : 'scale-down-protection';
    const bypass = breakGlassGroupOf(user, breakGlass);
    const deadline = ctx.deadline ?? Date.now() + checkTimeoutMs;
    const targets: readonly AdmissionTarget[] = Array.isArray(target) ? target : [target as Upstream];

    let outcome: Outcome = { summary: '' };
    try {
      for (const t of targets) {
        const rewritten = 'listOptions' in t && 'upstream' in t;
        const up = rewritten ? t.upstream : (t as Upstream);
        outcome = await judge(ctx, check, up, user, deletion, bodyLimit, deadline, rewritten ? t.listOptions : undefined);
        if (outcome.finding) break;
      }
    } catch (e) {
      // The break-glass path must not depend on the checks working; everyone else gets the failure.
      if (bypass === undefined) throw e;
      o.audit(ctx, annotationKey(rule), `bypassed by break-glass group ${goQuote(bypass)}: not checked: ${errorText(e)}`);
      ctx.log.warn({ rule, group: bypass }, 'admission check failed; break-glass bypass');
      return next();
    }
    const f = outcome.finding;
    if (!f) {
      o.audit(ctx, annotationKey(rule), `allowed: ${outcome.summary}`);
      return next();
    }
    if (bypass !== undefined) {
      o.audit(ctx, annotationKey(rule), `bypassed by break-glass group ${goQuote(bypass)}: ${f.reason}`);
      ctx.log.info({ rule, group: bypass, user: user.username }, 'admission bypassed by break-glass group');
      return next();
    }
    o.audit(ctx, annotationKey(rule), `denied: ${f.reason}`);
    throw refusal(f, groups);
  };
}

/** Which check the request needs, if any; no allocation for the requests that need none. */
function checkFor(ctx: RequestContext, rules: CompiledRules): Check | undefined {
  const info = ctx.info;
  switch (info.verb) {
    case 'delete':
      if (!rules.deletion.enabled || info.subresource !== '') return undefined;
      return info.apiGroup === '' && info.resource === 'namespaces' ? 'namespace' : 'object';
    case 'deletecollection':
      return rules.deletion.enabled ? 'collection' : undefined;
    case 'list':
      // `kubectl delete --all` and `kubectl delete -l` list, then delete one by one and carry on past refusals:
      // refusing the list is the only way "nothing is deleted" holds for them. kubectl names its command in every
      // request (KEP-859, on by default since 1.22).
      return rules.deletion.enabled && ctx.req.headers['kubectl-command'] === KUBECTL_DELETE ? 'collection' : undefined;
    case 'create':
      // An eviction deletes the pod.
      return rules.deletion.enabled && info.subresource === 'eviction' && info.apiGroup === '' && info.resource === 'pods' ? 'eviction' : undefined;
    case 'update':
    case 'patch':
      if (info.subresource !== '' && info.subresource !== 'scale') return undefined;
      return scaleLimitFor(rules, info.apiGroup, info.resource);
    default:
      return undefined;
  }
}

/**
 * What the upstream will list to delete a collection: the registry's DeleteCollection lists with the request's
 * options, its selectors, its continue token, resourceVersion and limit. A continue token from an older list
 * selects what matched then: without it, the look would be at what matches now, and an object whose other labels
 * changed since would be deleted unseen. For the LIST of `kubectl delete --all|-l`, the whole selection from its
 * start, whichever page is asked: kubectl deletes a page's objects before it lists the next.
 */
export function collectionListOptions(ctx: RequestContext): URLSearchParams {
  const from = ctx.url.searchParams;
  const q = new URLSearchParams();
  if (ctx.info.labelSelector) q.set('labelSelector', ctx.info.labelSelector);
  if (ctx.info.fieldSelector) q.set('fieldSelector', ctx.info.fieldSelector);
  if (ctx.info.verb === 'list') return q;
  for (const name of COLLECTION_LIST_OPTIONS) {
    const v = from.get(name);
    if (v) q.set(name, v);
  }
  return q;
}

const COLLECTION_LIST_OPTIONS = ['continue', 'resourceVersion', 'resourceVersionMatch', 'limit'] as const;

async function judge(ctx: RequestContext, check: Check, up: Upstream, user: UserInfo, deletion: DeletionSettings, bodyLimit: number, deadline: number, listOptions?: URLSearchParams): Promise<Outcome> {
  const info = ctx.info;
  const gr: GroupResource = { group: info.apiGroup, resource: info.resource };
  const path = ctx.url.pathname;
  switch (check) {
    case 'object':
      return checkObjectDeletion(up, path, gr, info.namespace, info.name, user, deletion, deadline);
    case 'eviction':
      return checkObjectDeletion(up, path.slice(0, path.lastIndexOf('/')), gr, info.namespace, info.name, user, deletion, deadline);
    case 'namespace':
      return checkNamespaceDeletion(up, info.name, user, deletion, deadline);
    case 'collection':
      return checkCollectionDeletion(up, path, gr, info.namespace, listOptions ?? collectionListOptions(ctx), user, deletion, deadline);
    default: {
      const body = await readBody(ctx, bodyLimit);
      const contentType = ctx.req.headers['content-type'];
      checkBodySyntax(contentType, body);
      const w = { method: ctx.req.method ?? 'PATCH', path, search: ctx.url.search, contentType, body, scaleSubresource: info.subresource === 'scale' };
      return checkScaleDown(up, w, gr, info.name, check, user, deadline);
    }
  }
}

function breakGlassGroupOf(user: UserInfo, breakGlass: ReadonlySet<string>): string | undefined {
  if (breakGlass.size === 0) return undefined;
  for (const g of user.groups) if (breakGlass.has(g)) return g;
  return undefined;
}

