// The chain's last step: who answers. Health, metrics and SelfSubjectReview are answered here; discovery is the
// control plane's, filtered to the exposed resources; every other request is forwarded to the control plane as
// the caller. Pods and Events move to the member cache in issue 4.

import type { IncomingMessage } from 'node:http';
import { newBadRequest, newForbiddenDecision, newNotFound } from '../api/status.js';
import { selfSubjectReviewResponse } from '../authn/selfsubjectreview.js';
import { authorized } from '../authz/filter.js';
import { checkBodySyntax, readBody } from '../request/body.js';
import { targetPath } from '../request/filter.js';
import { forwardDiscovery, isDiscoveryPath, newResourceNotFound, rejectNotExposed } from '../upstream/discovery.js';
import { forward } from '../upstream/forward.js';
import { forwardUpgrade } from '../upstream/upgrade.js';
import { serveCached, isCachedRead } from '../cache/serve.js';
import type { ActiveWatch } from '../cache/watch.js';
import { markInitialEventsSent } from '../flowcontrol/index.js';
import { memberCollection, memberResourceOf, routesToMember, routeToMember } from '../members/route.js';
import { collectionListOptions, type AdmissionTarget } from '../admission/step.js';
import type { Upstream } from '../upstream/client.js';
import type { Step } from './chain.js';
import type { RequestContext } from './context.js';
import type { Gateway } from './gateway.js';
import { isHealthPath, serveHealth } from './health.js';
import { notWebSocketHandshake } from './websocket.js';
import { writeJSON } from './respond.js';

const SSR_VERSIONS = new Set(['v1', 'v1beta1', 'v1alpha1']);

export function routingStep(g: Gateway): Step {
  return async (ctx) => {
    const info = ctx.info;
    const path = ctx.url.pathname;
    // Pods, events and /clusters/<name>/...: the member cache, the members themselves, or (facade) the cache service.
    if (ctx.cluster || isCachedRead(info) || routesToMember(ctx)) {
      const m = g.members;
      // The same test the authorization step made: what is served from the cache was authorized as a cached read.
      const fromCache = servedFromCache(g, ctx);
      // A forwarded watch (to a member or the cache service) is the upstream's to pace: it holds no seats here.
      if (info.verb === 'watch' && !fromCache) markInitialEventsSent(ctx);
      if (g.cacheService) return forwardTo(g.cacheService, ctx, g);
      if (!m) throw newNotFound({ group: 'cluster.karmada.io', resource: 'clusters' }, ctx.cluster ?? '');
      if (fromCache) {
        // An upgrade here is a watch (request info lets no other read upgrade): ctx.res makes it a WebSocket
        // (src/server/websocket.ts) when the watch writes its head.
        if (ctx.upgrade) {
          const why = notWebSocketHandshake(ctx.req as IncomingMessage);
          if (why !== undefined) throw newBadRequest(why);
        }
        await serveCached(ctx, m.cache, {
          stale: () => m.caches.stale(),
          allowedClusters: ctx.allowedClusters,
          onWatch: (w) => trackWatch(g, ctx, w),
          watchEventSent: g.metrics.watchEventsOf,
        });
        // A watch's initial events are written by now: it stops holding flow-control seats.
        if (info.verb === 'watch') markInitialEventsSent(ctx);
        return;
      }
      return routeToMember(ctx, { cache: m.cache, members: m.connections, maxBodyBytes: g.config.server.maxRequestBodyBytes, isStale: (c) => m.caches.isStale(c) });
    }
    if (!info.isResourceRequest) {
      if (isHealthPath(path)) return serveHealth(ctx, g.health);
      if (path === '/metrics') return serveMetrics(g, ctx);
      if (isDiscoveryPath(path)) {
        await forwardDiscovery(g.controlPlane, ctx.req, ctx.res, ctx.auditID, g.exposed, { impersonate: ctx.user, timeoutMs: remaining(ctx) });
        return;
      }
      await forward(g.controlPlane, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, timeoutMs: remaining(ctx), path: targetPath(ctx) });
      return;
    }
    // A forwarded watch is the upstream's to pace (its own flow control): it holds no seats here.
    if (info.verb === 'watch') markInitialEventsSent(ctx);
    if (info.apiGroup === 'authentication.k8s.io' && info.resource === 'selfsubjectreviews' && info.verb === 'create' && SSR_VERSIONS.has(info.apiVersion)) {
      // The gateway knows the caller; the control plane would only see the impersonated identity.
      return writeJSON(ctx.res, 201, JSON.stringify(selfSubjectReviewResponse(ctx.user!, `authentication.k8s.io/${info.apiVersion}` as any)));
    }
    if (ctx.upgrade) {
      if (!g.exposed.isExposed(info.apiGroup, info.resource)) throw newResourceNotFound();
      forwardUpgrade(g.controlPlane, ctx.req as IncomingMessage, ctx.upgrade.socket, ctx.upgrade.head, ctx.auditID, ctx.user!, { path: targetPath(ctx) });
      return;
    }
    if (rejectNotExposed(g.exposed, info.apiGroup, info.resource, ctx.res, ctx.auditID)) return;
    const body = await checkedBody(ctx, g);
    await forward(g.controlPlane, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, timeoutMs: remaining(ctx), path: targetPath(ctx), body });
  };
}

/** Reads the merged cache answers (a WebSocket watch too): authorized here, since no apiserver sees them. */
export function servedFromCache(g: Gateway, ctx: RequestContext): boolean {
  return !!g.members && !g.cacheService && !ctx.cluster && isCachedRead(ctx.info);
}

/** For flow control: how many objects a cached LIST goes through (its seats grow with it). */
export function estimateCachedObjects(g: Gateway, ctx: RequestContext): number | undefined {
  const info = ctx.info;
  if (info.verb !== 'list' || !servedFromCache(g, ctx)) return undefined;
  const resource = memberResourceOf(info);
  if (!resource) return undefined;
  const prefix = info.namespace ? `${info.namespace}/` : '';
  return g.members!.cache.storeOf(resource).snapshot().countFrom('', prefix);
}

/**
 * For admission: where a write will go, as routing will send it (the caller's own rights there decide what the
 * checks may read). undefined for what the gateway answers itself or does not forward.
 */
export function upstreamFor(g: Gateway, ctx: RequestContext): Upstream | AdmissionTarget[] | undefined {
  const info = ctx.info;
  if (ctx.upgrade || !info.isResourceRequest) return undefined;
  const toMembers = ctx.cluster !== undefined || isCachedRead(info) || routesToMember(ctx);
  // Facade: the cache service runs the same chain, admission included.
  if (toMembers && g.cacheService) return undefined;
  if (toMembers) {
    const m = g.members;
    if (!m) return undefined;
    if (ctx.cluster) return m.connections.get(ctx.cluster)?.impersonator;
    const resource = memberResourceOf(info)!;
    if (info.name) {
      const owners = m.cache.owners(resource, info.namespace, info.name).map((o) => o.cluster);
      return owners.map((c) => m.connections.get(c)?.impersonator).filter((u): u is Upstream => u !== undefined);
    }
    // A collection (deleted, or listed by `kubectl delete --all|-l`, which the cache answers): the members routing
    // deletes it in, each read as it will be asked, without the fleetgate.io/cluster requirements. The options are
    // admission's own (a LIST is read whole: the cache's continue tokens mean nothing to members).
    const { clusters, labelSelector } = memberCollection(info.labelSelector, m.connections.names());
    const listOptions = collectionListOptions(ctx);
    if (labelSelector) listOptions.set('labelSelector', labelSelector);
    else listOptions.delete('labelSelector');
    const targets: AdmissionTarget[] = [];
    for (const c of clusters) {
      const upstream = m.connections.get(c)?.impersonator;
      if (upstream) targets.push({ upstream, listOptions });
    }
    return targets;
  }
  if (info.apiGroup === 'authentication.k8s.io' && info.resource === 'selfsubjectreviews') return undefined;
  if (!g.exposed.isExposed(info.apiGroup, info.resource)) return undefined;
  return g.controlPlane;
}

/** Facade mode: the cache service answers pods, events and /clusters/..., as the caller. */
async function forwardTo(up: Upstream, ctx: RequestContext, g: Gateway): Promise<void> {
  const path = (ctx.cluster ? `/clusters/${encodeURIComponent(ctx.cluster)}` : '') + targetPath(ctx);
  if (ctx.upgrade) {
    forwardUpgrade(up, ctx.req as IncomingMessage, ctx.upgrade.socket, ctx.upgrade.head, ctx.auditID, ctx.user!, { path });
    return;
  }
  const body = await checkedBody(ctx, g);
  await forward(up, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, timeoutMs: remaining(ctx), path, body });
}

/** A watch of the cache: ended on shutdown, and counted when it is ended for not keeping up. */
function trackWatch(g: Gateway, ctx: RequestContext, w: ActiveWatch): void {
  g.watches.add(w);
  const { apiGroup, resource } = ctx.info;
  void w.done.then((why) => {
    g.watches.delete(w);
    if (why === 'unresponsive') g.metrics.terminatedWatchers.labels(apiGroup, resource).inc();
  });
}

/**
 * The body of a write, read (within the size limit) and checked before anything goes upstream, so malformed input
 * never reaches it; undefined for requests without one, which stream through.
 */
async function checkedBody(ctx: RequestContext, g: Gateway): Promise<Buffer | undefined> {
  const m = ctx.req.method;
  if (m !== 'POST' && m !== 'PUT' && m !== 'PATCH') return undefined;
  const body = await readBody(ctx, g.config.server.maxRequestBodyBytes);
  checkBodySyntax(ctx.req.headers['content-type'], body);
  return body;
}

/** Milliseconds left before the request's deadline; undefined for long-running requests. */
function remaining(ctx: RequestContext): number | undefined {
  return ctx.deadline === undefined ? undefined : Math.max(1, ctx.deadline - Date.now());
}

/** /metrics, readable by users the control plane's RBAC lets get the path, as kube-apiserver does. */
async function serveMetrics(g: Gateway, ctx: RequestContext): Promise<void> {
  const attrs = {
    user: ctx.user!,
    verb: 'get',
    isResourceRequest: false,
    path: '/metrics',
    namespace: '',
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    name: '',
  };
  await authorized(ctx, g.metrics, async () => {
    const d = await g.sar(attrs);
    if (!d.allowed) throw newForbiddenDecision(attrs, d);
  });
  const text = await g.metrics.registry.metrics();
  ctx.res.writeHead(200, { 'Content-Type': g.metrics.registry.contentType });
  ctx.res.end(text);
}
