// The audit webhook: events POSTed as an audit.k8s.io/v1 EventList to an endpoint described by a kubeconfig (as
// kube's --audit-webhook-config-file) or by a URL and CA. Batched (size or wait), one batch in flight so the
// receiver sees events in order, retried with exponential backoff on connection errors, 429 and 5xx, from a
// bounded buffer: when the buffer is full, or retries are exhausted, events are dropped and counted in
// apiserver_audit_error_total{plugin="webhook"}.

import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { upstreamFromEndpoint, upstreamFromKubeconfig, type Upstream } from '../upstream/client.js';
import { throttledReporter, type Backend } from './backend.js';
import type { AuditMetrics } from './metrics.js';

export interface WebhookOptions {
  /** A kubeconfig whose current (or named) context is the webhook: server URL, CA, client cert or token. */
  kubeconfig?: string;
  context?: string;
  /** Or the URL and the CA file to trust for it. */
  url?: string;
  caFile?: string;
  /**
   * batch: events are sent in the background. blocking: a mutation waits until its RequestReceived event is
   * accepted by the webhook (the default when there is no log file, so mutations are still audited first).
   */
  mode: 'batch' | 'blocking';
  /** Events held while the webhook is slow or down; beyond this they are dropped. */
  bufferSize: number;
  maxBatchSize: number;
  /** A partial batch is sent after this long. */
  maxBatchWaitMs: number;
  /** Backoff before the first retry, then ×1.5 with 20% jitter (kube's webhook backoff). */
  initialBackoffMs: number;
  /** Attempts per batch, the first included. */
  maxAttempts: number;
  /** Per POST. */
  timeoutMs: number;
  /** How long close() keeps trying to deliver what is buffered. */
  closeTimeoutMs: number;
}

export const WEBHOOK_DEFAULTS: Omit<WebhookOptions, 'kubeconfig' | 'context' | 'url' | 'caFile' | 'mode'> = {
  bufferSize: 10_000,
  maxBatchSize: 400,
  maxBatchWaitMs: 30_000,
  initialBackoffMs: 1_000,
  maxAttempts: 5,
  timeoutMs: 30_000,
  closeTimeoutMs: 10_000,
};

interface Item {
  line: string;
  waiter?: { resolve(): void; reject(err: unknown): void };
}

class NonRetriable extends Error {}

export function webhookUpstream(o: Pick<WebhookOptions, 'kubeconfig' | 'context' | 'url' | 'caFile'>): Upstream {
  if (o.kubeconfig) return upstreamFromKubeconfig(o.kubeconfig, o.context || undefined, 'audit-webhook');
  if (!o.url) throw new Error('audit webhook: set either a kubeconfig or a url');
  return upstreamFromEndpoint({ name: 'audit-webhook', role: 'audit webhook', url: o.url, caPem: o.caFile ? readFileSync(o.caFile, 'utf8') : undefined });
}

export function newWebhookBackend(opts: Partial<WebhookOptions> & Pick<WebhookOptions, 'mode'>, deps: { log: Logger; metrics: AuditMetrics; upstream?: Upstream }): Backend {
  const o = { ...WEBHOOK_DEFAULTS, ...opts } as WebhookOptions;
  const up = deps.upstream ?? webhookUpstream(o);
  const path = up.url.pathname + up.url.search;
  const errors = deps.metrics.errors.labels('webhook');
  const report = throttledReporter(5000, (err, lost) =>
    deps.log.error({ err: (err as Error).message, webhook: up.url.origin, lostEvents: lost }, 'audit webhook: events were dropped'),
  );
  let buffer: Item[] = [];
  let sending: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closing = false;
  let closed = false;
  let giveUpAt = Infinity; // during close: stop retrying after closeTimeoutMs

  const drop = (items: Item[], err: unknown) => {
    errors.inc(items.length);
    report(err, items.length);
    for (const it of items) it.waiter?.reject(err);
  };

  async function post(lines: string[]): Promise<void> {
    const body = '{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[' + lines.join(',') + ']}';
    const headers: string[] = ['content-type', 'application/json', 'accept', 'application/json'];
    if (up.authHeader) headers.push('authorization', up.authHeader);
    const r = await up.dispatcher.request({ method: 'POST' as Dispatcher.HttpMethod, path, headers, body, headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs });
    await r.body.dump();
    if (r.statusCode >= 200 && r.statusCode < 300) return;
    const err = new Error(`the webhook answered HTTP ${r.statusCode}`);
    if (r.statusCode === 429 || r.statusCode >= 500) throw err;
    throw new NonRetriable(err.message);
  }

  async function deliver(items: Item[]): Promise<void> {
    const lines = items.map((it) => it.line);
    let delay = o.initialBackoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await post(lines);
        for (const it of items) it.waiter?.resolve();
        return;
      } catch (e) {
        const wait = delay * (1 + Math.random() * 0.2);
        if (e instanceof NonRetriable || attempt >= o.maxAttempts || Date.now() + wait > giveUpAt) return drop(items, e);
        await new Promise((r) => setTimeout(r, wait).unref());
        delay *= 1.5;
      }
    }
  }

  let gatedInBuffer = 0; // events a mutation is waiting on: they go out at once
  const due = () => buffer.length >= o.maxBatchSize || closing || gatedInBuffer > 0;

  async function loop(force: boolean): Promise<void> {
    try {
      while (buffer.length > 0 && (force || due())) {
        force = false;
        const batch = buffer.slice(0, o.maxBatchSize);
        buffer = buffer.slice(batch.length);
        for (const it of batch) if (it.waiter) gatedInBuffer--;
        await deliver(batch);
      }
    } finally {
      sending = undefined;
      if (buffer.length > 0) schedule();
    }
  }

  function schedule(): void {
    if (sending) return;
    if (due()) {
      if (timer) clearTimeout(timer);
      timer = undefined;
      sending = loop(false);
      return;
    }
    timer ??= setTimeout(() => {
      timer = undefined;
      if (!sending) sending = loop(true);
    }, o.maxBatchWaitMs);
    timer.unref();
  }

  async function flush(): Promise<void> {
    while (sending || buffer.length > 0) {
      if (!sending) {
        if (timer) clearTimeout(timer);
        timer = undefined;
        sending = loop(true);
      }
      await sending;
    }
  }

  return {
    plugin: 'webhook',
    gates: o.mode === 'blocking',
    write(line, durable) {
      const gated = durable && o.mode === 'blocking';
      if (closed || buffer.length >= o.bufferSize) {
        const err = new Error(closed ? 'the audit webhook is closed' : 'audit buffer queue blocked');
        drop([{ line }], err);
        return gated ? Promise.reject(err) : undefined;
      }
      const it: Item = { line };
      let p: Promise<void> | undefined;
      if (gated) {
        p = new Promise<void>((resolve, reject) => (it.waiter = { resolve, reject }));
        gatedInBuffer++;
      }
      buffer.push(it);
      schedule();
      return p;
    },
    flush,
    async close() {
      if (closed) return;
      closing = true;
      giveUpAt = Date.now() + o.closeTimeoutMs;
      await flush();
      closed = true;
      await up.close();
    },
  };
}
