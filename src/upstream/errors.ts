// Upstream failures as the Status a client gets: 503 when the upstream cannot be reached (refused, DNS, TLS),
// 504 when it does not answer in time, 502 when it answers with something that is not HTTP or drops the
// connection mid-exchange. Messages name the upstream by its origin; they never carry a credential.

import { newBadGateway, newServiceUnavailable, newTimeoutError, type StatusError } from '../api/status.js';
import { describeUpstream, type Upstream } from './client.js';

/** Where the exchange was when it failed. */
export type FailurePhase = 'connect' | 'response';

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

/** Our own deadline for a non-long-running request. */
export class UpstreamDeadline extends Error {
  readonly ms: number;
  constructor(ms: number) {
    super(`no response within ${formatSeconds(ms)}`);
    this.name = 'UpstreamDeadline';
    this.ms = ms;
  }
}

export function upstreamFailure(up: Upstream, err: unknown, phase: FailurePhase): StatusError {
  const who = describeUpstream(up);
  if (err instanceof UpstreamDeadline) return newTimeoutError(`${who} did not respond within ${formatSeconds(err.ms)}`, 0);
  const code = errorCode(err);
  if (code !== undefined && TIMEOUT_CODES.has(code)) {
    return newTimeoutError(`${who} did not respond in time: ${errorText(err)}`, 0);
  }
  // Nothing was sent yet: the upstream is down, unreachable or untrusted.
  if (phase === 'connect') return newServiceUnavailable(`${who} is unavailable: ${errorText(err)}`);
  return newBadGateway(`${who} failed to answer: ${errorText(err)}`);
}

function errorCode(err: unknown): string | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

/**
 * The error's own words. Node's happy-eyeballs connect fails with an AggregateError whose message is empty; its
 * parts say what happened ("connect ECONNREFUSED ::1:6443").
 */
export function errorText(err: unknown): string {
  if (err instanceof AggregateError && !err.message) {
    const parts = err.errors.map((e) => errorText(e)).filter((m) => m !== '');
    if (parts.length > 0) return parts.join('; ');
  }
  if (err instanceof Error) {
    if (err.message) return err.message;
    return errorCode(err) ?? err.name;
  }
  return String(err);
}

function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return Number.isInteger(s) ? `${s}s` : `${s.toFixed(3).replace(/0+$/, '')}s`;
}
