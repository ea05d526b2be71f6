import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newAuditMetrics, type AuditMetrics } from '../../src/audit/metrics.js';
import { newWebhookBackend, webhookUpstream } from '../../src/audit/webhook.js';

const log = pino({ level: 'silent' });
let server: Server;
let url: string;
let received: { path: string; body: any }[];
/** Status codes to answer, in order; 200 once exhausted. */
let answers: number[];
let registry: Registry;
let metrics: AuditMetrics;

beforeEach(async () => {
  received = [];
  answers = [];
  registry = new Registry();
  metrics = newAuditMetrics(registry);
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const code = answers.shift() ?? 200;
      if (code === 200) received.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString()) });
      res.writeHead(code).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/audit/events`;
});
afterEach(async () => {
  await new Promise((r) => server.close(r));
});

async function dropped(): Promise<number> {
  const m = await registry.getSingleMetric('apiserver_audit_error_total')!.get();
  return m.values.filter((v) => v.labels.plugin === 'webhook').reduce((a, v) => a + v.value, 0);
}
const ev = (n: number) => JSON.stringify({ kind: 'Event', apiVersion: 'audit.k8s.io/v1', auditID: `id-${n}` });
const ids = () => received.flatMap((r) => r.body.items.map((i: any) => i.auditID));

async function until(pred: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('audit webhook', () => {
  it('POSTs EventLists in order, in batches of at most maxBatchSize, to the endpoint path', async () => {
    const b = newWebhookBackend({ url, mode: 'batch', maxBatchSize: 3, maxBatchWaitMs: 20 }, { log, metrics, upstream: webhookUpstream({ url }) });
    for (let i = 0; i < 7; i++) b.write(ev(i), false);
    await until(() => ids().length === 7);
    expect(ids()).toEqual(['id-0', 'id-1', 'id-2', 'id-3', 'id-4', 'id-5', 'id-6']);
    expect(received.map((r) => r.body.items.length)).toEqual([3, 3, 1]);
    expect(received[0]!.path).toBe('/audit/events');
    expect(received[0]!.body).toMatchObject({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {} });
    await b.close();
  });

  it('retries 5xx and 429 with backoff, then delivers', async () => {
    answers = [500, 429, 503];
    const b = newWebhookBackend({ url, mode: 'batch', maxBatchWaitMs: 10, initialBackoffMs: 5, maxAttempts: 5 }, { log, metrics });
    b.write(ev(1), false);
    await until(() => ids().length === 1);
    expect(await dropped()).toBe(0);
    await b.close();
  });

  it('drops and counts a batch the webhook refuses (4xx) or that runs out of attempts', async () => {
    answers = [400, 500, 500];
    const b = newWebhookBackend({ url, mode: 'batch', maxBatchWaitMs: 10, initialBackoffMs: 5, maxAttempts: 2, maxBatchSize: 2 }, { log, metrics });
    b.write(ev(1), false);
    b.write(ev(2), false);
    await until(() => answers.length === 2);
    b.write(ev(3), false);
    await b.flush();
    expect(await dropped()).toBe(3);
    expect(received).toEqual([]);
    await b.close();
  });

  it('a full buffer drops new events and counts them', async () => {
    const b = newWebhookBackend({ url, mode: 'batch', bufferSize: 2, maxBatchSize: 10, maxBatchWaitMs: 60_000 }, { log, metrics });
    for (let i = 0; i < 5; i++) b.write(ev(i), false);
    expect(await dropped()).toBe(3);
    await b.close();
    expect(ids()).toEqual(['id-0', 'id-1']);
  });

  it('blocking mode: a durable write resolves once delivered, and rejects when it cannot be', async () => {
    const b = newWebhookBackend({ url, mode: 'blocking', maxBatchWaitMs: 60_000, initialBackoffMs: 5, maxAttempts: 2 }, { log, metrics });
    expect(b.gates).toBe(true);
    b.write(ev(0), false);
    await b.write(ev(1), true);
    expect(ids()).toEqual(['id-0', 'id-1']);
    answers = [503, 503];
    await expect(b.write(ev(2), true)).rejects.toThrow('HTTP 503');
    await b.close();
  });

  it('close delivers what is buffered; later writes are dropped', async () => {
    const b = newWebhookBackend({ url, mode: 'batch', maxBatchWaitMs: 60_000 }, { log, metrics });
    b.write(ev(1), false);
    b.write(ev(2), false);
    await b.close();
    expect(ids()).toEqual(['id-1', 'id-2']);
    b.write(ev(3), false);
    expect(await dropped()).toBe(1);
  });

  it('close gives up on an endpoint that never answers after closeTimeoutMs', async () => {
    answers = Array(100).fill(503);
    const b = newWebhookBackend({ url, mode: 'batch', maxBatchWaitMs: 60_000, initialBackoffMs: 50, maxAttempts: 100, closeTimeoutMs: 200 }, { log, metrics });
    b.write(ev(1), false);
    const t0 = Date.now();
    await b.close();
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await dropped()).toBe(1);
  });
});
