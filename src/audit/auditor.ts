// The auditor: the policy, the backends and the metrics of one gateway. It serializes each event once and hands
// the line to every backend; a durable emit settles when every gating backend has stored it.

import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CounterChild } from '../metrics/vec.js';
import type { Upstream } from '../upstream/client.js';
import type { Backend } from './backend.js';
import { eventJSON } from './event.js';
import { LOG_FILE_DEFAULTS, newLogFileBackend, type LogFileOptions } from './logfile.js';
import { newAuditMetrics, type AuditMetrics } from './metrics.js';
import type { CompiledPolicy } from './policy.js';
import { LEVELS, type Event, type Level } from './types.js';
import { newWebhookBackend, type WebhookOptions } from './webhook.js';

export interface AuditOptions {
  policy: CompiledPolicy;
  /** The JSON-lines log file; the durable record every mutation waits for. */
  log?: Partial<LogFileOptions> & Pick<LogFileOptions, 'path'>;
  /** The webhook; its mode defaults to blocking when there is no log file, batch otherwise. */
  webhook?: Partial<WebhookOptions>;
  /**
   * Let a mutation through when its audit record cannot be stored (counted and logged). Off by default: such a
   * mutation is refused with 503 and never reaches the control plane.
   */
  failOpen?: boolean;
  /** The body limit of the gateway (server.maxRequestBodyBytes): mutation bodies are read to audit them. */
  maxRequestBodyBytes: number;
  /** RequestResponse events keep response bodies up to this size; larger ones are left out (and say so). */
  maxResponseObjectBytes?: number;
}

export interface Auditor {
  policy: CompiledPolicy;
  metrics: AuditMetrics;
  failOpen: boolean;
  maxRequestBodyBytes: number;
  maxResponseObjectBytes: number;
  /** apiserver_audit_level_total, one child per level (no label object per request). */
  levelCounter: Record<Level, CounterChild>;
  backends: readonly Backend[];
  /**
   * Writes the event as it is now. durable: the promise resolves once every gating backend has stored it and
   * rejects if one could not; otherwise undefined is returned and failures are counted by the backends.
   */
  emit(ev: Event, durable: boolean): Promise<void> | undefined;
  /** Writes everything queued (tests, health). */
  flush(): Promise<void>;
  /** Graceful shutdown: everything queued is written (the webhook tries for its closeTimeoutMs), then released. */
  close(): Promise<void>;
}

export const DEFAULT_MAX_RESPONSE_OBJECT_BYTES = 1024 * 1024;

export function newAuditor(o: AuditOptions, deps: { log: Logger; registry: Registry; webhookUpstream?: Upstream }): Auditor {
  const metrics = newAuditMetrics(deps.registry);
  const log = deps.log.child({ component: 'audit' });
  const backends: Backend[] = [];
  if (o.log) backends.push(newLogFileBackend({ ...LOG_FILE_DEFAULTS, ...o.log }, { log, metrics }));
  if (o.webhook) {
    const mode = o.webhook.mode ?? (o.log ? 'batch' : 'blocking');
    backends.push(newWebhookBackend({ ...o.webhook, mode }, { log, metrics, upstream: deps.webhookUpstream }));
  }
  const levelCounter = {} as Auditor['levelCounter'];
  for (const l of LEVELS) levelCounter[l] = metrics.levels.labels(l);
  let closing: Promise<void> | undefined;
  return {
    policy: o.policy,
    metrics,
    failOpen: o.failOpen ?? false,
    maxRequestBodyBytes: o.maxRequestBodyBytes,
    maxResponseObjectBytes: o.maxResponseObjectBytes ?? DEFAULT_MAX_RESPONSE_OBJECT_BYTES,
    levelCounter,
    backends,
    emit(ev, durable) {
      const line = eventJSON(ev);
      metrics.events.inc();
      let one: Promise<void> | undefined;
      let all: Promise<void>[] | undefined;
      for (const b of backends) {
        const p = b.write(line, durable && b.gates);
        if (!p) continue;
        if (!one) one = p;
        else (all ??= [one]).push(p);
      }
      if (all) return Promise.all(all).then(() => {});
      if (one) return one;
      return durable ? Promise.resolve() : undefined;
    },
    async flush() {
      await Promise.all(backends.map((b) => b.flush()));
    },
    close() {
      closing ??= Promise.all(backends.map((b) => b.close())).then(() => {});
      return closing;
    },
  };
}
