// The chain's audit step (k8s.io/apiserver's WithAudit): decide the level from the policy, write RequestReceived,
// ResponseStarted for long-running requests, exactly one ResponseComplete (and Panic for an unexpected error).
//
// A mutation (POST, PUT, PATCH, DELETE) is audited before it is applied: its RequestReceived event is written and
// synced before next() lets it go on towards the control plane, and when that fails the request ends here with a
// 503 (unless failOpen). For that record to exist, RequestReceived is written for audited mutations even when the
// policy omits the stage. Reads never wait for the audit log; an unwritable log only costs their events, which
// are counted in apiserver_audit_error_total and logged.

import { isStatusError, newServiceUnavailable, statusJson, toStatus } from '../api/status.js';
import type { Decision } from '../api/user.js';
import { readBody } from '../request/body.js';
import type { Step } from '../server/chain.js';
import type { RequestContext } from '../server/context.js';
import type { Auditor } from './auditor.js';
import { captureResponse, captureUpgrade, capturedBody, type Captured } from './capture.js';
import {
  codeStatus,
  decodeRequestBody,
  decodeResponseBody,
  dropManagedFields,
  eventStatus,
  fillObjectRef,
  microTime,
  newEvent,
  nowMicros,
  protobufObjectMeta,
  statusFromBody,
} from './event.js';
import { levelAtLeast, type Event, type RequestAuditConfig } from './types.js';

/** Status bodies of failed responses are read (for responseStatus) up to this size at every level. */
const STATUS_BODY_LIMIT = 64 * 1024;
const MUTATING_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export const ANNOTATION_DECISION = 'authorization.k8s.io/decision';
export const ANNOTATION_REASON = 'authorization.k8s.io/reason';
/** Set by the gateway when a RequestResponse event had to leave the response body out. */
export const ANNOTATION_RESPONSE_OMITTED = 'audit.fleetgate.io/response-object-omitted';

interface AuditState {
  ctx: RequestContext;
  ev: Event;
  /** The request body was looked at already. */
  bodyLogged: boolean;
  config: RequestAuditConfig;
  auditor: Auditor;
  longRunning: boolean;
  captured?: Captured;
  completed: boolean;
}

const STATE = Symbol('audit');
const PENDING = Symbol('audit-annotations');
/** The request is not audited (level None): annotations have nowhere to go. */
const NOT_AUDITED = 'none' as const;

interface AuditedContext extends RequestContext {
  [STATE]?: AuditState | typeof NOT_AUDITED;
  [PENDING]?: string[];
}

/**
 * Records an annotation on the request's audit event (AddAuditAnnotation). Steps before the audit step may call
 * it too: their annotations are kept until the event exists. A key keeps its first value.
 */
export function addAuditAnnotation(ctx: RequestContext, key: string, value: string): void {
  const c = ctx as AuditedContext;
  const st = c[STATE];
  if (st === NOT_AUDITED) return;
  if (st === undefined) {
    (c[PENDING] ??= []).push(key, value);
    return;
  }
  const kept = annotate(st.ev, key, value);
  if (kept !== value) ctx.log.warn({ key, value, kept }, 'audit annotation already set; keeping the first value');
}

/** The authorizer's decision, as kube's authorization filter records it. */
export function annotateAuthorization(ctx: RequestContext, d: Decision): void {
  addAuditAnnotation(ctx, ANNOTATION_DECISION, d.allowed ? 'allow' : 'forbid');
  addAuditAnnotation(ctx, ANNOTATION_REASON, d.reason);
}

/** The request's audit event as it stands (tests, and steps that want to know the level); undefined when not audited. */
export function auditEventOf(ctx: RequestContext): Event | undefined {
  const st = (ctx as AuditedContext)[STATE];
  return st && st !== NOT_AUDITED ? st.ev : undefined;
}

/** Sets key unless it is set already; returns the value the event keeps. */
function annotate(ev: Event, key: string, value: string): string {
  const a = (ev.annotations ??= {});
  const prev = a[key];
  if (prev !== undefined) return prev;
  a[key] = value;
  return value;
}

export function auditStep(auditor: Auditor): Step {
  if (auditor.backends.length === 0) return (_ctx, next) => next();
  return async (ctx, next) => {
    const received = nowMicros();
    const c = ctx as AuditedContext;
    // Policies name the caller: for an impersonated request that is the impersonator (kube audits before it
    // impersonates), and the impersonated identity is recorded beside it.
    const user = ctx.impersonator ?? ctx.user;
    const config = auditor.policy.evaluate(user, ctx.info);
    auditor.levelCounter[config.level].inc();
    if (config.level === 'None') {
      c[STATE] = NOT_AUDITED;
      return next();
    }

    const ev = newEvent({ level: config.level, auditID: ctx.auditID, req: ctx.req, info: ctx.info, user, impersonatedUser: ctx.impersonator ? ctx.user : undefined, receivedMicros: received });
    const st: AuditState = { ctx, ev, bodyLogged: false, config, auditor, longRunning: ctx.info.longRunning, completed: false };
    c[STATE] = st;
    const pending = c[PENDING];
    if (pending) {
      for (let i = 0; i + 1 < pending.length; i += 2) annotate(ev, pending[i]!, pending[i + 1]!);
      c[PENDING] = undefined;
    }

    const method = ctx.req.method ?? 'GET';
    const mutation = MUTATING_METHODS.has(method);
    let refused: unknown;
    if (mutation && readsBodyEarly(ctx)) {
      // Routing reads the same body (readBody caches it), so this costs no second read.
      try {
        logRequestObject(st, await readBody(ctx, auditor.maxRequestBodyBytes), ctx.req.headers['content-type']);
      } catch (e) {
        refused = e;
      }
    }

    const durable = mutation && refused === undefined;
    if (durable || !config.omitStages.has('RequestReceived')) {
      ev.stage = 'RequestReceived';
      ev.stageTimestamp = ev.requestReceivedTimestamp;
      const stored = auditor.emit(ev, durable);
      if (stored) {
        try {
          await stored;
        } catch (e) {
          auditor.metrics.rejected.inc();
          if (auditor.failOpen) {
            ctx.log.error({ err: (e as Error).message }, 'audit: the mutation goes ahead unaudited (failOpen)');
          } else {
            ctx.log.debug({ err: (e as Error).message }, 'audit: the mutation is refused, its audit record could not be stored');
            refused = newServiceUnavailable('failed to store audit event');
          }
        }
      }
    }
    if (refused !== undefined) {
      complete(st, refused);
      throw refused;
    }

    if (ctx.upgrade) {
      captureUpgrade(ctx.upgrade.socket, (code) => started(st, code));
    } else {
      st.captured = captureResponse(ctx.res, { onHead: (cap) => onHead(st, cap) });
    }
    try {
      await next();
    } catch (e) {
      complete(st, e);
      throw e;
    }
    const socket = ctx.upgrade?.socket;
    if (socket && !socket.destroyed) {
      // The tunnel lives on after routing returns; the request is complete when it closes.
      socket.once('close', () => complete(st, undefined));
      return;
    }
    complete(st, undefined);
  };
}

/**
 * For the chain before authentication: a request that fails to authenticate never reaches the audit step, so
 * it is audited here (WithFailedAuthenticationAudit), with no user and kube's "Authentication failed" message.
 */
export function auditAuthenticationFailuresStep(auditor: Auditor): Step {
  if (auditor.backends.length === 0) return (_ctx, next) => next();
  return async (ctx, next) => {
    const received = nowMicros();
    try {
      await next();
    } catch (e) {
      const c = ctx as AuditedContext;
      if (c[STATE] === undefined && isStatusError(e) && e.status.code === 401 && ctx.info) {
        const config = auditor.policy.evaluate(undefined, ctx.info);
        auditor.levelCounter[config.level].inc();
        if (config.level !== 'None') {
          const ev = newEvent({ level: config.level, auditID: ctx.auditID, req: ctx.req, info: ctx.info, user: undefined, impersonatedUser: undefined, receivedMicros: received });
          const st: AuditState = { ctx, ev, bodyLogged: true, config, auditor, longRunning: false, completed: false };
          c[STATE] = st;
          if (!config.omitStages.has('RequestReceived')) auditor.emit(ev, false);
          ev.responseStatus = { metadata: {}, message: authenticationMethods(ctx), code: 401 };
          complete(st, undefined);
        }
      }
      throw e;
    }
  };
}

/** getAuthMethods: what the caller tried, for the 401's audit event. */
function authenticationMethods(ctx: RequestContext): string {
  const methods: string[] = [];
  const auth = String(ctx.req.headers.authorization ?? '').trim();
  const parts = auth.split(' ');
  if (parts[0]!.toLowerCase() === 'basic' && Buffer.from(parts[1] ?? '', 'base64').toString('utf8').includes(':')) methods.push('basic');
  if (parts.length > 1 && parts[0]!.toLowerCase() === 'bearer') methods.push('bearer');
  if ((ctx.url.searchParams.get('access_token') ?? '').trim()) methods.push('access_token');
  try {
    const cert = (ctx.req.socket as { getPeerCertificate?: () => { raw?: Buffer } }).getPeerCertificate?.();
    if (cert?.raw) methods.push('x509');
  } catch {
    // not a TLS connection
  }
  return methods.length > 0 ? `Authentication failed, attempted: ${methods.join(', ')}` : 'Authentication failed, no credentials provided';
}

/**
 * Whether the body can be read here. Only object writes: every route reads those bodies too and sends what was
 * read, whereas tunnels, proxies and subresource creates (eviction, binding) are streamed upstream from the
 * request itself, which a read here would leave empty. Bodies a later step reads are still logged at the end.
 */
function readsBodyEarly(ctx: RequestContext): boolean {
  const info = ctx.info;
  if (!BODY_METHODS.has(ctx.req.method ?? '') || !info.isResourceRequest || ctx.upgrade || info.longRunning) return false;
  return !(info.verb === 'create' && info.subresource !== '');
}

function logRequestObject(st: AuditState, body: Buffer, contentType: string | undefined): void {
  st.bodyLogged = true;
  const obj = decodeRequestBody(body, contentType);
  if (obj === undefined) {
    // Protobuf: no requestObject without schemas, but the object's identity is still recorded.
    const md = protobufObjectMeta(body, contentType);
    if (md) fillObjectRef(st.ev.objectRef, { metadata: md });
    return;
  }
  fillObjectRef(st.ev.objectRef, obj);
  if (!levelAtLeast(st.config.level, 'Request')) return;
  if (st.config.omitManagedFields) dropManagedFields(obj);
  st.ev.requestObject = obj;
}

/** The head is going out: the code is known; long-running requests get their ResponseStarted event now. */
function onHead(st: AuditState, cap: Captured): number {
  started(st, cap.code);
  if (st.longRunning) return 0;
  const json = (cap.contentType ?? '').startsWith('application/json');
  if (!json) return 0;
  if (st.config.level === 'RequestResponse') return st.auditor.maxResponseObjectBytes;
  return cap.code >= 300 ? STATUS_BODY_LIMIT : 0;
}

function started(st: AuditState, code: number): void {
  if (st.ev.responseStatus !== undefined || st.completed) return;
  st.ev.responseStatus = codeStatus(code);
  if (st.longRunning) emitStage(st, 'ResponseStarted');
}

/** ResponseComplete, once: after next() returned, threw, or (tunnels) the socket closed. */
function complete(st: AuditState, err: unknown): void {
  if (st.completed) return;
  const ev = st.ev;
  if (err !== undefined) {
    const s = toStatus(err);
    if (!isStatusError(err)) {
      // A bug, not an answer: kube's Panic stage, then the 500 the client gets.
      const panic = eventStatus({ code: 500, status: 'Failure', reason: 'InternalError', message: `APIServer panic'd: ${(err as Error)?.message ?? String(err)}` });
      const before = ev.responseStatus;
      ev.responseStatus = panic;
      emitStage(st, 'Panic');
      ev.responseStatus = before;
    }
    const headSent = st.captured !== undefined && st.captured.code !== 0;
    // An error after the head went out cuts the stream: the client saw the code already written.
    if (!headSent) {
      ev.responseStatus = eventStatus(s);
      if (st.config.level === 'RequestResponse') ev.responseObject = JSON.parse(statusJson(s));
      // The Status is about to be written: a long-running request's response starts with it.
      if (st.longRunning) emitStage(st, 'ResponseStarted');
    }
  } else if (st.captured && st.captured.code !== 0) {
    logResponseBody(st, st.captured);
  }
  if (st.ctx.body !== undefined && !st.bodyLogged) logRequestObject(st, st.ctx.body, st.ctx.req.headers['content-type']);
  st.completed = true;
  if (ev.responseStatus === undefined) {
    // Nothing was written: kube's "Connection closed early".
    const faked = eventStatus({ code: 200, status: 'Success', message: 'Connection closed early' });
    if (st.longRunning) {
      ev.responseStatus = faked;
      emitStage(st, 'ResponseStarted');
    }
    ev.responseStatus = faked;
  }
  emitStage(st, 'ResponseComplete');
}

function logResponseBody(st: AuditState, cap: Captured): void {
  const ev = st.ev;
  if (cap.overflow) {
    if (st.config.level === 'RequestResponse') annotate(ev, ANNOTATION_RESPONSE_OMITTED, `larger than ${st.auditor.maxResponseObjectBytes} bytes`);
    return;
  }
  const body = capturedBody(cap);
  if (body === null) return;
  const obj = decodeResponseBody(body, cap.contentType, cap.contentEncoding);
  if (obj === undefined) return;
  const status = statusFromBody(obj, cap.code);
  if (status) ev.responseStatus = status;
  if (st.config.level !== 'RequestResponse') return;
  if (st.config.omitManagedFields) dropManagedFields(obj);
  ev.responseObject = obj;
}

function emitStage(st: AuditState, stage: Event['stage']): void {
  if (st.config.omitStages.has(stage)) return;
  st.ev.stage = stage;
  st.ev.stageTimestamp = microTime(nowMicros());
  st.auditor.emit(st.ev, false);
}

