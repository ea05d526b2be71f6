// kube-apiserver's request metrics as the gateway records them: their labels come from request paths, so made-up
// resource names must not add series without end.

import { describe, expect, it } from 'vitest';
import { newApiserverMetrics, observeRequest, REQUEST_SERIES_LIMIT, REQUEST_DURATION_SERIES_LIMIT } from '../../src/metrics/apiserver.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';

describe('apiserver request metrics', () => {
  it('record a request under its verb, resource, scope and code', async () => {
    const m = newApiserverMetrics();
    const info = newRequestInfo('GET', '/api/v1/namespaces/demo/pods/web-1', new URLSearchParams());
    observeRequest(m, info, 'GET', false, 200, 0.003);
    const text = await m.registry.metrics();
    expect(text).toContain('apiserver_request_total{verb="GET",dry_run="",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver",code="200"} 1');
    expect(text).toContain('apiserver_request_duration_seconds_bucket{le="0.005",verb="GET",dry_run="",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver"} 1');
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
    expect(scrape.length).toBeLessThan(40 * 1024 * 1024);
  }, 60_000);
});
