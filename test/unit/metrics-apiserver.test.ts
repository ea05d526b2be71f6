// kube-apiserver's request metrics as the gateway records them: their labels come from request paths, so made-up
// resource names must not add series without end.

import { describe, expect, it } from 'vitest';
import { newForbiddenDecision } from '../../src/api/status.js';
import { authenticationStep } from '../../src/authn/filter.js';
import type { Authenticator } from '../../src/authn/index.js';
import { authorizationStep } from '../../src/authz/filter.js';
import { compressUsername, newApiserverMetrics, observeRequest, REQUEST_SERIES_LIMIT, REQUEST_DURATION_SERIES_LIMIT } from '../../src/metrics/apiserver.js';
import type { RequestContext } from '../../src/server/context.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';

describe('apiserver request metrics', () => {
  it('record a request under its verb, resource, scope and code', async () => {
    const m = newApiserverMetrics();
    const info = newRequestInfo('GET', '/api/v1/namespaces/demo/pods/web-1', new URLSearchParams());
    observeRequest(m, info, 'GET', false, 200, 0.003);
    const text = await m.registry.metrics();
    expect(text).toContain('apiserver_request_total{verb="GET",dry_run="",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver",code="200"} 1');
    expect(text).toContain('apiserver_request_duration_seconds_bucket{le="0.005",verb="GET",dry_run="",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver"} 1');
    expect(text).toContain('apiserver_request_sli_duration_seconds_bucket{le="0.05",verb="GET",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver"} 1');
  });

  it('leave the time waited in a flow-control queue out of the SLI latency, as kube-apiserver does', async () => {
    const m = newApiserverMetrics();
    const info = newRequestInfo('GET', '/api/v1/namespaces/demo/pods', new URLSearchParams());
    observeRequest(m, info, 'LIST', false, 200, 0.9, 0.875);
    const text = await m.registry.metrics();
    expect(text).toContain('apiserver_request_duration_seconds_bucket{le="0.8",verb="LIST",dry_run="",group="",version="v1",resource="pods",subresource="",scope="namespace",component="apiserver"} 0');
    expect(text).toContain('apiserver_request_sli_duration_seconds_bucket{le="0.05",verb="LIST",group="",version="v1",resource="pods",subresource="",scope="namespace",component="apiserver"} 1');
    // Long-running requests have neither.
    observeRequest(m, newRequestInfo('GET', '/api/v1/pods', new URLSearchParams('watch=1')), 'WATCH', false, 200, undefined);
    expect(await m.registry.metrics()).not.toMatch(/apiserver_request_sli_duration_seconds_count\{verb="WATCH"/);
  });

  it('keep at most REQUEST_SERIES_LIMIT label sets: requests for made-up resources past it count as overflow', async () => {
    const m = newApiserverMetrics();
    const extra = 7;
    for (let i = 0; i < REQUEST_SERIES_LIMIT + extra; i++) {
      const info = newRequestInfo('GET', `/apis/example.com/v1/made-up-${i}`, new URLSearchParams());
      observeRequest(m, info, 'LIST', false, 404, 0.001);
    }
    const total = (await m.requestTotal.get()).values;
    expect(total).toHaveLength(REQUEST_SERIES_LIMIT + 1);
    expect(total.at(-1)).toMatchObject({ labels: { resource: 'overflow', code: 'overflow' }, value: extra });
    expect(total.reduce((a, v) => a + v.value, 0)).toBe(REQUEST_SERIES_LIMIT + extra);
    // The histogram keeps fewer: its series are 26 lines each in a scrape.
    const durations = (await m.requestDuration.get()).values.filter((v) => v.metricName === 'apiserver_request_duration_seconds_count');
    expect(durations).toHaveLength(REQUEST_DURATION_SERIES_LIMIT + 1);
    expect(durations.at(-1)).toMatchObject({ labels: { resource: 'overflow' }, value: REQUEST_SERIES_LIMIT + extra - REQUEST_DURATION_SERIES_LIMIT });
    const scrape = await m.registry.metrics();
    // Both latency histograms at their limit: ~49 MB (REQUEST_DURATION_SERIES_LIMIT).
    expect(scrape.length).toBeLessThan(52 * 1024 * 1024);
  }, 60_000);
});

describe('authentication and authorization metrics', () => {
  it("name users by kube-apiserver's categories only", () => {
    expect(compressUsername('kubelet')).toBe('kubelet');
    expect(compressUsername('system:serviceaccount:kube-system:default')).toBe('system:serviceaccount:kube-system:default');
    expect(compressUsername('jane@example.com')).toBe('email_id');
    expect(compressUsername('system:anonymous')).toBe('other');
    expect(compressUsername('system:serviceaccount:payments:deployer')).toBe('other');
  });

  it('record results with the exponential buckets of kube-apiserver (1 ms doubling, 15 of them)', async () => {
    const m = newApiserverMetrics();
    m.recordAuthentication('success', 0.0015, 'jane@example.com');
    m.recordAuthentication('error', 0.02);
    m.recordAuthorization('denied', 0.003);
    const text = await m.registry.metrics();
    expect(text).toContain('authentication_attempts{result="success"} 1');
    expect(text).toContain('authentication_attempts{result="error"} 1');
    expect(text).toContain('authenticated_user_requests{username="email_id"} 1');
    expect(text).not.toContain('jane');
    expect(text).toContain('authentication_duration_seconds_bucket{le="0.002",result="success"} 1');
    expect(text).toContain('authentication_duration_seconds_bucket{le="16.384",result="error"} 1');
    expect(text).toContain('authorization_attempts_total{result="denied"} 1');
    expect(text).toContain('authorization_duration_seconds_bucket{le="0.004",result="denied"} 1');
  });
});

describe('the authentication and authorization steps', () => {
  const ctxFor = (path: string) =>
    ({ req: { headers: {}, rawHeaders: [] }, url: new URL(path, 'https://x'), info: newRequestInfo('GET', path, new URLSearchParams()) }) as unknown as RequestContext;

  it('mark a request they refuse, so that the request metrics leave it out', async () => {
    const m = newApiserverMetrics();
    const authenticator = { authenticate: async () => null } as unknown as Authenticator;
    const authn = authenticationStep({ authenticator, anonymous: false, sar: async () => ({ allowed: true, reason: '' }), publicPaths: () => false, metrics: m });
    const refused = ctxFor('/api/v1/pods');
    await expect(authn(refused, async () => {})).rejects.toMatchObject({ status: { code: 401 } });
    expect(refused.refusedByFilter).toBe(true);

    // RBAC's refusal (allowed false, denied false) is "no opinion"; a Deny (status.denied) is "denied", as kube labels them.
    const attrs = { user: { username: 'u', groups: [] }, verb: 'list', isResourceRequest: true, path: '/api/v1/pods', namespace: '', apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: '', name: '' };
    for (const denied of [false, true]) {
      const authz = authorizationStep({
        authorizeCachedRead: async () => {
          throw newForbiddenDecision(attrs, { reason: '', denied });
        },
        servedFromCache: () => true,
        metrics: m,
      });
      const refused = ctxFor('/api/v1/pods');
      await expect(authz(refused, async () => {})).rejects.toMatchObject({ status: { code: 403 } });
      expect(refused.refusedByFilter).toBe(true);
    }

    // Impersonate-Group without Impersonate-User: kube's impersonation filter answers 400, outside its request metrics.
    const odd = ctxFor('/api/v1/pods');
    Object.assign(odd.req, { headers: { 'impersonate-group': 'g' }, rawHeaders: ['Impersonate-Group', 'g'] });
    const anyone = { authenticate: async () => ({ username: 'u', groups: ['system:authenticated'] }) } as unknown as Authenticator;
    await expect(authenticationStep({ authenticator: anyone, anonymous: false, sar: async () => ({ allowed: true, reason: '' }), publicPaths: () => false, metrics: m })(odd, async () => {})).rejects.toMatchObject({ status: { code: 400 } });
    expect(odd.refusedByFilter).toBe(true);

    const allowed = ctxFor('/api/v1/pods');
    await authorizationStep({ authorizeCachedRead: async () => undefined, servedFromCache: () => true, metrics: m })(allowed, async () => {});
    expect(allowed.refusedByFilter).toBeUndefined();
    const text = await m.registry.metrics();
    expect(text).toContain('authentication_attempts{result="failure"} 1');
    expect(text).toContain('authorization_attempts_total{result="denied"} 1');
    expect(text).toContain('authorization_attempts_total{result="no-opinion"} 1');
    expect(text).toContain('authorization_attempts_total{result="allowed"} 1');
  });
});
