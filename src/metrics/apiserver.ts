// The request metrics a kube-apiserver exports, with its names, labels and buckets, so dashboards and alerts
// written for kube-apiserver work on fleetgate unchanged (k8s.io/apiserver pkg/endpoints/metrics).

import { Registry, collectDefaultMetrics } from 'prom-client';
import type { RequestInfo } from '../request/requestinfo.js';
import { CounterVec, GaugeVec, HistogramVec, type CounterChild } from './vec.js';

const COMPONENT = 'apiserver';
const DURATION_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** apiserver_request_sli_duration_seconds' buckets: kube's are the duration's from 0.05 s. */
const SLI_BUCKETS = DURATION_BUCKETS.filter((b) => b >= 0.05);
const REQUEST_LABELS = ['verb', 'dry_run', 'group', 'version', 'resource', 'subresource', 'scope', 'component'] as const;
/**
 * Label sets per request metric. group, version, resource and subresource are read from the path, unchecked (a
 * request for a resource that does not exist is still counted, as a 404), so a caller sending made-up names would
 * otherwise add series, and memory, without end (kube's own apiserver_request_terminations_total had the same
 * problem, kubernetes/kubernetes#141007). A fleet's real label sets number in the low thousands; past the limit
 * new ones are counted in one series labelled "overflow".
 */
export const REQUEST_SERIES_LIMIT = 20_000;
/**
 * The latency histograms' own limit (apiserver_request_duration_seconds and apiserver_request_sli_duration_seconds,
 * each): a series is 24-26 lines of exposition (its buckets, sum and count), and at 20,000 label sets a scrape of the
 * first alone was 100 MB of text that held the event loop ~1.9 s on a 2-core machine. With both at this limit a
 * scrape is 49 MB and held it ~0.8 s on a slow stretch of that machine; label sets come only from callers who
 * authenticated, or anonymous ones where anonymous access is on (a refused request is not counted). The counters keep
 * 20,000; each histogram's overflow series takes the rest.
 */
export const REQUEST_DURATION_SERIES_LIMIT = 5_000;

export interface ApiserverMetrics {
  registry: Registry;
  requestTotal: CounterVec<(typeof REQUEST_LABELS)[number] | 'code'>;
  requestDuration: HistogramVec<(typeof REQUEST_LABELS)[number]>;
  requestSliDuration: HistogramVec<Exclude<(typeof REQUEST_LABELS)[number], 'dry_run'>>;
  inflight: GaugeVec<'request_kind'>;
  longRunning: GaugeVec<Exclude<(typeof REQUEST_LABELS)[number], 'dry_run'>>;
  terminatedWatchers: CounterVec<'group' | 'resource'>;
  tlsHandshakeErrors: CounterVec;
  watchEvents: CounterVec<'group' | 'version' | 'kind'>;
  watchEventsSizes: HistogramVec<'group' | 'version' | 'kind'>;
  authenticationAttempts: CounterVec<'result'>;
  authenticationDuration: HistogramVec<'result'>;
  authenticatedUserRequests: CounterVec<'username'>;
  authorizationAttempts: CounterVec<'result'>;
  authorizationDuration: HistogramVec<'result'>;
  /** Records an authentication (authentication_attempts and its kin), its series bound once: it runs per request. */
  recordAuthentication: AuthenticationRecorder;
  /** Records an authorization the gateway makes, bound likewise. */
  recordAuthorization: AuthorizationRecorder;
  /** Where watches of one kind report each event they send (apiserver_watch_events_*), bound once per kind. */
  watchEventsOf(group: string, version: string, kind: string): (bytes: number) => void;
}

/** k8s.io/component-base's ExponentialBuckets(0.001, 2, 15), the authentication and authorization filters' buckets. */
const AUTH_BUCKETS = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);

export function newApiserverMetrics(registry = new Registry()): ApiserverMetrics {
  collectDefaultMetrics({ register: registry });
  const m: Omit<ApiserverMetrics, 'recordAuthentication' | 'recordAuthorization' | 'watchEventsOf'> = {
    registry,
    requestTotal: new CounterVec({
      name: 'apiserver_request_total',
      help: 'Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
      labelNames: [...REQUEST_LABELS, 'code'],
      maxSeries: REQUEST_SERIES_LIMIT,
      registers: [registry],
    }),
    requestDuration: new HistogramVec({
      name: 'apiserver_request_duration_seconds',
      help: 'Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.',
      labelNames: [...REQUEST_LABELS],
      buckets: DURATION_BUCKETS,
      maxSeries: REQUEST_DURATION_SERIES_LIMIT,
      registers: [registry],
    }),
    requestSliDuration: new HistogramVec({
      name: 'apiserver_request_sli_duration_seconds',
      help: 'Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.',
      labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component'],
      buckets: SLI_BUCKETS,
      maxSeries: REQUEST_DURATION_SERIES_LIMIT,
      registers: [registry],
    }),
    inflight: new GaugeVec({
      name: 'apiserver_current_inflight_requests',
      help: 'Maximal number of currently used inflight request limit of this apiserver per request kind in last second.',
      labelNames: ['request_kind'],
      registers: [registry],
    }),
    longRunning: new GaugeVec({
      name: 'apiserver_longrunning_requests',
      help: 'Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.',
      labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component'],
      maxSeries: REQUEST_SERIES_LIMIT,
      registers: [registry],
    }),
    // Label values are those of the watches the cache serves: pods, core events and events.k8s.io events.
    terminatedWatchers: new CounterVec({
      name: 'apiserver_terminated_watchers_total',
      help: 'Counter of watchers closed due to unresponsiveness broken by resource type.',
      labelNames: ['group', 'resource'],
      registers: [registry],
    }),
    // Every TLS handshake that failed: clients with the wrong CA or certificate, plain HTTP to the TLS port, probes
    // that connect and leave (kube-apiserver counts the handshake errors Go's HTTP server logs).
    tlsHandshakeErrors: new CounterVec({ name: 'apiserver_tls_handshake_errors_total', help: "Number of requests dropped with 'TLS handshake error from' error", registers: [registry] }),
    watchEvents: new CounterVec({ name: 'apiserver_watch_events_total', help: 'Number of events sent in watch clients', labelNames: ['group', 'version', 'kind'], registers: [registry] }),
    watchEventsSizes: new HistogramVec({
      name: 'apiserver_watch_events_sizes',
      help: 'Watch event size distribution in bytes',
      labelNames: ['group', 'version', 'kind'],
      // ExponentialBuckets(1024, 2, 8): 1K ... 128K.
      buckets: Array.from({ length: 8 }, (_, i) => 1024 * 2 ** i),
      registers: [registry],
    }),
    authenticationAttempts: new CounterVec({ name: 'authentication_attempts', help: 'Counter of authenticated attempts.', labelNames: ['result'], registers: [registry] }),
    authenticationDuration: new HistogramVec({
      name: 'authentication_duration_seconds',
      help: 'Authentication duration in seconds broken out by result.',
      labelNames: ['result'],
      buckets: AUTH_BUCKETS,
      registers: [registry],
    }),
    authenticatedUserRequests: new CounterVec({
      name: 'authenticated_user_requests',
      help: 'Counter of authenticated requests broken out by username.',
      labelNames: ['username'],
      registers: [registry],
    }),
    authorizationAttempts: new CounterVec({
      name: 'authorization_attempts_total',
      help: "Counter of authorization attempts broken down by result. It can be either 'allowed', 'denied', 'no-opinion' or 'error'.",
      labelNames: ['result'],
      registers: [registry],
    }),
    authorizationDuration: new HistogramVec({
      name: 'authorization_duration_seconds',
      help: 'Authorization duration in seconds broken out by result.',
      labelNames: ['result'],
      buckets: AUTH_BUCKETS,
      registers: [registry],
    }),
  };
  return { ...m, recordAuthentication: authenticationRecorder(m), recordAuthorization: authorizationRecorder(m), watchEventsOf: watchEventRecorders(m) };
}

/**
 * What an authentication came to, as kube-apiserver's authentication filter labels it: success (anonymous access
 * included), failure (no credential, and anonymous access is off), error (a credential was presented and none was
 * good).
 */
export type AuthenticationResult = 'success' | 'failure' | 'error';

export type AuthenticationRecorder = (result: AuthenticationResult, seconds: number, username?: string) => void;

/** Records authentications: each one's result and time, and for a success who, by the kind of name only. */
function authenticationRecorder(m: Pick<ApiserverMetrics, 'authenticationAttempts' | 'authenticationDuration' | 'authenticatedUserRequests'>): AuthenticationRecorder {
  const attempts = { success: m.authenticationAttempts.labels('success'), failure: m.authenticationAttempts.labels('failure'), error: m.authenticationAttempts.labels('error') };
  const durations = { success: m.authenticationDuration.labels('success'), failure: m.authenticationDuration.labels('failure'), error: m.authenticationDuration.labels('error') };
  // Seven kinds of name at most (compressUsername).
  const users = new Map<string, CounterChild>();
  return (result, seconds, username = '') => {
    if (result === 'success') {
      const kind = compressUsername(username);
      let c = users.get(kind);
      if (c === undefined) users.set(kind, (c = m.authenticatedUserRequests.labels(kind)));
      c.inc();
    }
    attempts[result].inc();
    durations[result].observe(seconds);
  };
}

/**
 * kube-apiserver's categories of user names for authenticated_user_requests: a handful of well-known identities by
 * name, email-like names as email_id, everyone else as other, so the metric names no real user and stays small.
 */
export function compressUsername(username: string): string {
  switch (username) {
    case 'admin':
    case 'client':
    case 'kube_proxy':
    case 'kubelet':
    case 'system:serviceaccount:kube-system:default':
      return username;
    default:
      return username.includes('@') ? 'email_id' : 'other';
  }
}

/**
 * What an authorization came to, by kube's labels: denied when the authorizer said Deny, no-opinion when it only did
 * not allow (RBAC's answer when no rule matches, so most refusals).
 */
export type AuthorizationResult = 'allowed' | 'denied' | 'no-opinion' | 'error';

export type AuthorizationRecorder = (result: AuthorizationResult, seconds: number) => void;

/** Records authorizations, as authenticationRecorder records authentications. */
function authorizationRecorder(m: Pick<ApiserverMetrics, 'authorizationAttempts' | 'authorizationDuration'>): AuthorizationRecorder {
  const a = m.authorizationAttempts;
  const d = m.authorizationDuration;
  const attempts = { allowed: a.labels('allowed'), denied: a.labels('denied'), 'no-opinion': a.labels('no-opinion'), error: a.labels('error') };
  const durations = { allowed: d.labels('allowed'), denied: d.labels('denied'), 'no-opinion': d.labels('no-opinion'), error: d.labels('error') };
  return (result, seconds) => {
    attempts[result].inc();
    durations[result].observe(seconds);
  };
}

/**
 * Records the events watches of one kind send, as kube-apiserver's watch handler counts them (every event a client
 * is sent: initial, live, bookmarks): a recorder per kind, made at its first watch.
 */
function watchEventRecorders(m: Pick<ApiserverMetrics, 'watchEvents' | 'watchEventsSizes'>): ApiserverMetrics['watchEventsOf'] {
  const byKind = new Map<string, (bytes: number) => void>();
  return (group, version, kind) => {
    const key = `${group}/${version}/${kind}`;
    let r = byKind.get(key);
    if (r === undefined) {
      const count = m.watchEvents.labels(group, version, kind);
      const sizes = m.watchEventsSizes.labels(group, version, kind);
      byKind.set(
        key,
        (r = (bytes) => {
          count.inc();
          sizes.observe(bytes);
        }),
      );
    }
    return r;
  };
}

/** The verb label: kube's "reported verb" (LIST, WATCH, APPLY, CONNECT ... or the HTTP method). */
export function reportedVerb(info: RequestInfo, method: string, contentType: string | undefined): string {
  if (!info.isResourceRequest) return method.toUpperCase();
  switch (info.verb) {
    case 'list':
      return 'LIST';
    case 'watch':
      return 'WATCH';
    case 'get':
      return ['log', 'exec', 'attach', 'portforward', 'proxy'].includes(info.subresource) ? 'CONNECT' : 'GET';
    case 'create':
      return ['exec', 'attach', 'portforward', 'proxy'].includes(info.subresource) ? 'CONNECT' : 'POST';
    case 'update':
      return 'PUT';
    case 'patch':
      return contentType?.startsWith('application/apply-patch') ? 'APPLY' : 'PATCH';
    case 'delete':
      return 'DELETE';
    case 'deletecollection':
      return 'DELETECOLLECTION';
    default:
      return method.toUpperCase();
  }
}

/** The scope label: resource (named), namespace, cluster, or empty for non-resource requests. */
export function scopeOf(info: RequestInfo): string {
  if (!info.isResourceRequest) return '';
  if (info.name) return 'resource';
  if (info.namespace) return 'namespace';
  return 'cluster';
}

/**
 * Records a finished request: apiserver_request_total with its code and, for a request that is not long-running,
 * apiserver_request_duration_seconds and apiserver_request_sli_duration_seconds, the latter without the time it
 * waited in a flow-control queue (kube's SLI also leaves out its admission webhooks; the gateway calls none). Label
 * values are passed in labelNames order (no label object per request).
 */
export function observeRequest(m: ApiserverMetrics, info: RequestInfo, verb: string, dryRun: boolean, code: number, seconds: number | undefined, queueWaitSeconds = 0): void {
  const dry = dryRun ? 'All' : '';
  const scope = scopeOf(info);
  m.requestTotal.labels(verb, dry, info.apiGroup, info.apiVersion, info.resource, info.subresource, scope, COMPONENT, code).inc();
  if (seconds === undefined) return;
  m.requestDuration.labels(verb, dry, info.apiGroup, info.apiVersion, info.resource, info.subresource, scope, COMPONENT).observe(seconds);
  m.requestSliDuration.labels(verb, info.apiGroup, info.apiVersion, info.resource, info.subresource, scope, COMPONENT).observe(Math.max(0, seconds - queueWaitSeconds));
}

/** The apiserver_longrunning_requests series of a long-running request (a watch, logs, exec ...). */
export function longRunningGauge(m: ApiserverMetrics, info: RequestInfo, verb: string) {
  return m.longRunning.labels(verb, info.apiGroup, info.apiVersion, info.resource, info.subresource, scopeOf(info), COMPONENT);
}

export function isMutating(method: string): boolean {
  return !(method === 'GET' || method === 'HEAD' || method === 'OPTIONS');
}
