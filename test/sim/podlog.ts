// GET pods/log for the sim: deterministic synthetic log lines per container, with the checks and messages of the
// two places a real request passes through: the apiserver (PodLogOptions validation, container selection in
// pkg/registry/core/pod/strategy.go LogLocation) and the kubelet (container state, pkg/kubelet/kubelet_pods.go
// validateContainerLogStatus, whose errors the apiserver returns as 400 with the kubelet's text).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubeObject } from '../../src/api/meta.js';
import { fieldForbidden, fieldInvalid, newBadRequest, newInvalid, statusBody, type FieldError, type StatusError } from '../../src/api/status.js';

/** How many lines a container "has written" before the request; follow=true adds more. */
const HISTORY_LINES = 20;
/** Pace of new lines while following. */
export const FOLLOW_INTERVAL_MS = 500;
/** Containers with no start time in their status log from this instant. */
const DEFAULT_START = Date.parse('2026-11-22T10:00:00Z');

interface LogOptions {
  container: string;
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceSeconds?: number;
  sinceTime?: number;
}

interface LogLine {
  /** ms since the epoch */
  at: number;
  text: string;
}

export function servePodLog(req: IncomingMessage, res: ServerResponse, pod: KubeObject, q: URLSearchParams): void {
  let opts: LogOptions;
  let plan: { lines: LogLine[]; live: boolean; startN: number } | null;
  try {
    opts = parseOptions(pod, q);
    plan = planLog(pod, opts);
  } catch (err) {
    writeError(res, err as StatusError);
    return;
  }
  if (plan === null) {
    // Not scheduled: LogLocation returns no location and the handler answers 204 No Content.
    res.writeHead(204);
    res.end();
    return;
  }

  res.writeHead(200, { 'Content-Type': 'text/plain' });
  let budget = opts.limitBytes ?? Infinity;
  // Returns false once limitBytes is used up (the kubelet's LimitWriter then ends the stream).
  const write = (line: LogLine): boolean => {
    let text = (opts.timestamps ? rfc3339Nano(line.at) + ' ' : '') + line.text + '\n';
    if (budget !== Infinity) {
      const bytes = Buffer.from(text, 'utf8');
      if (bytes.length >= budget) {
        res.write(bytes.subarray(0, budget));
        budget = 0;
        return false;
      }
      budget -= bytes.length;
      text = bytes.toString('utf8');
    }
    res.write(text);
    return true;
  };

  for (const line of plan.lines) {
    if (!write(line)) {
      res.end();
      return;
    }
  }
  if (!opts.follow || !plan.live) {
    res.end();
    return;
  }

  const name = pod.metadata.name ?? '';
  let n = plan.startN;
  const timer = setInterval(() => {
    const at = Date.now();
    if (!write({ at, text: lineText(at, name, opts.container, n++) })) stop();
  }, FOLLOW_INTERVAL_MS);
  const stop = (): void => {
    clearInterval(timer);
    if (!res.writableEnded) res.end();
  };
  // The client going away is the only other end of a follow.
  res.on('close', stop);
  req.on('close', () => {
    if (req.destroyed || res.destroyed) stop();
  });
}

/** What the simulated application writes: its own timestamp (seconds), level, where it runs, a counter. */
function lineText(at: number, pod: string, container: string, n: number): string {
  return `${new Date(at).toISOString().slice(0, 19)}Z INFO ${pod}/${container} request handled n=${n}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Options and checks.

function parseOptions(pod: KubeObject, q: URLSearchParams): LogOptions {
  const errs: FieldError[] = [];
  const opts: LogOptions = {
    container: q.get('container') ?? '',
    follow: queryBool(q, 'follow'),
    previous: queryBool(q, 'previous'),
    timestamps: queryBool(q, 'timestamps'),
  };
  const tail = queryInt(q, 'tailLines');
  const limit = queryInt(q, 'limitBytes');
  const since = queryInt(q, 'sinceSeconds');
  const sinceTimeRaw = q.get('sinceTime');
  if (tail !== undefined) opts.tailLines = tail;
  if (limit !== undefined) opts.limitBytes = limit;
  if (since !== undefined) opts.sinceSeconds = since;
  if (sinceTimeRaw !== null && sinceTimeRaw !== '') {
    const t = Date.parse(sinceTimeRaw);
    if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}T/.test(sinceTimeRaw)) {
      throw newBadRequest(`parsing time ${JSON.stringify(sinceTimeRaw)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(sinceTimeRaw)} as "2006"`);
    }
    opts.sinceTime = t;
  }
  // validation.ValidatePodLogOptions.
  if (opts.tailLines !== undefined && opts.tailLines < 0) errs.push(fieldInvalid('tailLines', opts.tailLines, 'must be greater than or equal to 0'));
  if (opts.limitBytes !== undefined && opts.limitBytes < 1) errs.push(fieldInvalid('limitBytes', opts.limitBytes, 'must be greater than 0'));
  if (opts.sinceSeconds !== undefined && opts.sinceTime !== undefined) {
    errs.push(fieldForbidden('', 'at most one of `sinceTime` or `sinceSeconds` may be specified'));
  } else if (opts.sinceSeconds !== undefined && opts.sinceSeconds < 1) {
    errs.push(fieldInvalid('sinceSeconds', opts.sinceSeconds, 'must be greater than 0'));
  }
  if (errs.length > 0) throw newInvalid({ group: '', kind: 'PodLogOptions' }, pod.metadata.name ?? '', errs);
  opts.container = validateContainer(pod, opts.container);
  return opts;
}

/** The pod's containers in podutil.VisitContainers order: init, regular, ephemeral. */
export function containerNames(pod: KubeObject): string[] {
  const spec = (pod as any).spec ?? {};
  const names: string[] = [];
  for (const list of [spec.initContainers, spec.containers, spec.ephemeralContainers]) {
    for (const c of Array.isArray(list) ? list : []) if (c && typeof c.name === 'string') names.push(c.name);
  }
  return names;
}

/**
 * LogLocation/streamLocation's container choice: the only container when there is one, otherwise the name must
 * be given and must exist. Shared with exec and attach, which use the same rules and messages.
 */
export function validateContainer(pod: KubeObject, container: string): string {
  const name = pod.metadata.name ?? '';
  const spec = (pod as any).spec ?? {};
  const regular: any[] = Array.isArray(spec.containers) ? spec.containers : [];
  if (container === '') {
    if (regular.length === 1) return String(regular[0].name);
    if (regular.length === 0) throw newBadRequest(`a container name must be specified for pod ${name}`);
    throw newBadRequest(`a container name must be specified for pod ${name}, choose one of: [${containerNames(pod).join(' ')}]`);
  }
  if (!containerNames(pod).includes(container)) throw newBadRequest(`container ${container} is not valid for pod ${name}`);
  return container;
}

/**
 * Which lines to send, after the kubelet's checks. null: the pod is not scheduled (no kubelet to ask).
 * A missing container status counts as running: the sim's pods do not all carry kubelet-written statuses.
 */
function planLog(pod: KubeObject, opts: LogOptions): { lines: LogLine[]; live: boolean; startN: number } | null {
  const p = pod as any;
  if (!p.spec?.nodeName) return null;
  const podName = pod.metadata.name ?? '';
  const status = findContainerStatus(p.status, opts.container);
  const quoted = `${JSON.stringify(opts.container)} in pod ${JSON.stringify(podName)}`;
  let start: number;
  let live = true;
  let previousExit: number | undefined;

  if (opts.previous) {
    const last = status?.lastState?.terminated;
    if (!last) throw newBadRequest(`previous terminated container ${quoted} not found`);
    start = parseTime(last.startedAt) ?? DEFAULT_START;
    live = false;
    previousExit = typeof last.exitCode === 'number' ? last.exitCode : 0;
  } else if (!status || status.state?.running) {
    start = parseTime(status?.state?.running?.startedAt) ?? parseTime(p.status?.startTime) ?? parseTime(pod.metadata.creationTimestamp) ?? DEFAULT_START;
  } else if (status.state?.terminated) {
    start = parseTime(status.state.terminated.startedAt) ?? DEFAULT_START;
    live = false;
  } else if (status.lastState?.terminated) {
    start = parseTime(status.lastState.terminated.startedAt) ?? DEFAULT_START;
    live = false;
  } else if (status.state?.waiting) {
    const reason = String(status.state.waiting.reason ?? '');
    if (reason === 'ErrImagePull') throw newBadRequest(`container ${quoted} is waiting to start: image can't be pulled`);
    if (reason === 'ImagePullBackOff') throw newBadRequest(`container ${quoted} is waiting to start: trying and failing to pull image`);
    throw newBadRequest(`container ${quoted} is waiting to start: ${reason}`);
  } else {
    throw newBadRequest(`container ${quoted} is waiting to start - no logs yet`);
  }

  let lines: LogLine[] = [];
  for (let n = 1; n <= HISTORY_LINES; n++) {
    const at = start + (n - 1) * 1000;
    lines.push({ at, text: lineText(at, podName, opts.container, n) });
  }
  if (previousExit !== undefined) {
    const at = start + HISTORY_LINES * 1000;
    lines.push({ at, text: `${new Date(at).toISOString().slice(0, 19)}Z ERROR ${podName}/${opts.container} exiting code=${previousExit}` });
  }
  // The kubelet tails the file first, then skips lines older than since.
  if (opts.tailLines !== undefined) lines = opts.tailLines === 0 ? [] : lines.slice(-opts.tailLines);
  const since = opts.sinceTime ?? (opts.sinceSeconds !== undefined ? Date.now() - opts.sinceSeconds * 1000 : undefined);
  if (since !== undefined) lines = lines.filter((l) => l.at >= since);
  return { lines, live, startN: HISTORY_LINES + 1 };
}

function findContainerStatus(status: any, container: string): any {
  for (const list of [status?.containerStatuses, status?.initContainerStatuses, status?.ephemeralContainerStatuses]) {
    if (!Array.isArray(list)) continue;
    const s = list.find((x: any) => x?.name === container);
    if (s) return s;
  }
  return undefined;
}

function parseTime(v: unknown): number | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

/** runtime.Convert_Slice_string_To_bool: absent is false; present is true unless "0" or "false". */
export function queryBool(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

function queryInt(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^[+-]?\d+$/.test(v)) throw newBadRequest(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  return Number.parseInt(v, 10);
}

/** time.RFC3339Nano: fractional seconds with trailing zeros removed. */
function rfc3339Nano(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-11-22T10:00:00.123Z
  const [head, frac] = iso.slice(0, -1).split('.') as [string, string];
  const f = frac.replace(/0+$/, '');
  return f === '' ? `${head}Z` : `${head}.${f}Z`;
}

function writeError(res: ServerResponse, err: StatusError): void {
  if (!err || !(err as any).status) throw err;
  const s = err.status;
  res.writeHead(s.code, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'X-Content-Type-Options': 'nosniff' });
  res.end(statusBody(s));
}
