// Writing answers the way kube-apiserver does: every error a Status, with the headers clients and caches expect.

import type { ServerResponse } from 'node:http';
import { statusBody, type Status } from '../api/status.js';
import type { Response } from './context.js';

export function writeStatus(res: Response, auditID: string, s: Status): void {
  if (res.headersSent) {
    // Too late for a Status: cut the stream, as a real apiserver's client would see it.
    res.destroy();
    return;
  }
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
    'X-Content-Type-Options': 'nosniff',
    'Audit-Id': auditID,
  };
  if (s.details?.retryAfterSeconds) headers['Retry-After'] = String(s.details.retryAfterSeconds);
  res.writeHead(s.code, headers);
  res.end(statusBody(s));
}

export function writeJSON(res: Response, code: number, body: string | Buffer, extra?: Record<string, string>): void {
  res.writeHead(code, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', ...extra });
  res.end(body);
}

// ---------------------------------------------------------------------------------------------------------------
// Long responses (streamed LISTs) share the one event loop with every other request. Go's apiserver runs each on
// its own goroutine; here a list whose client reads fast would write chunk after chunk in one turn, and a GET
// that arrived meanwhile waits for the whole body. So a long response writes for at most one slice, then waits
// its turn behind the other long responses (round-robin), one slice per event-loop iteration: between slices
// the loop reads and answers whatever else arrived. A client that does not read holds no slice (it waits for
// 'drain' first).

/**
 * How long one long response may write before the next one gets a turn: about one 256 KiB chunk with its TLS here.
 * 1 ms before the eighth round of 2026-11-28; a quarter of it let other requests in sooner at no cost to the lists
 * (scenario 7's notes: four alternating quick pairs; scenario 2's lists as fast).
 */
export const SLICE_MS = 0.25;

const turns: Array<() => void> = [];
let turnScheduled = false;

function grantTurn(): void {
  turnScheduled = false;
  const next = turns.shift();
  if (turns.length > 0) scheduleTurn();
  next?.();
}

function scheduleTurn(): void {
  if (turnScheduled) return;
  turnScheduled = true;
  // setImmediate, not a microtask or nextTick: the loop polls for I/O before it runs.
  setImmediate(grantTurn);
}

/** Resolves at this caller's next turn: after every long response already waiting had one, and after I/O. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    turns.push(resolve);
    scheduleTurn();
  });
}

/** What a list writer needs of a response (a ServerResponse, an Http2ServerResponse, or a gzip in front of one). */
export interface StreamingBody {
  writeHead(code: number, headers: Record<string, string>): unknown;
  /** done, when given, is called once the chunk's bytes are no longer needed (handed to the connection), or never. */
  write(chunk: string | Buffer, done?: () => void): boolean;
  /** done, as write's: called once the last chunk's bytes are no longer needed, or never. */
  end(chunk?: string | Buffer, done?: () => void): unknown;
  on(event: string, fn: () => void): unknown;
  off(event: string, fn: () => void): unknown;
  readonly destroyed?: boolean;
}

/**
 * body, with writes paced: write() answers false (as a full socket would) when this response's slice is used up
 * or the socket is full, and 'drain' comes at its next turn. Writers that honour backpressure need no change.
 */
export function paced(body: StreamingBody): StreamingBody {
  return new PacedBody(body);
}

// A class rather than an object literal with its own getter: such a literal gets a hidden class of its own per
// response, allocated among long-lived objects, which keeps everything it reaches alive through young-generation
// collections (see Context in server.ts).
class PacedBody implements StreamingBody {
  private sliceStart = performance.now();
  private readonly drainListeners = new Set<() => void>();
  private yielding = false;
  // An Http2ServerResponse has no 'destroyed'; its 'close' says the stream is gone.
  private closed = false;

  constructor(private readonly body: StreamingBody) {
    body.on('close', () => (this.closed = true));
  }

  private async yieldTurn(full: boolean): Promise<void> {
    this.yielding = true;
    if (full) await untilDrainOrClose(this.body);
    await nextTurn();
    this.yielding = false;
    this.sliceStart = performance.now();
    for (const fn of [...this.drainListeners]) fn();
  }

  writeHead(code: number, headers: Record<string, string>): unknown {
    return this.body.writeHead(code, headers);
  }

  write(chunk: string | Buffer, done?: () => void): boolean {
    const ok = this.body.write(chunk, done);
    if (this.yielding) return ok;
    if (ok && performance.now() - this.sliceStart < SLICE_MS) return true;
    void this.yieldTurn(!ok);
    return false;
  }

  end(chunk?: string | Buffer, done?: () => void): unknown {
    return this.body.end(chunk, done);
  }

  on(event: string, fn: () => void): this {
    if (event === 'drain') this.drainListeners.add(fn);
    else this.body.on(event, fn);
    return this;
  }

  off(event: string, fn: () => void): this {
    if (event === 'drain') this.drainListeners.delete(fn);
    else this.body.off(event, fn);
    return this;
  }

  get destroyed(): boolean {
    return this.closed || (this.body.destroyed ?? false);
  }
}

/** Resolves when the connection takes more ('drain') or is gone ('close'). */
export function untilDrainOrClose(body: Pick<StreamingBody, 'on' | 'off' | 'destroyed'>): Promise<void> {
  if (body.destroyed) return Promise.resolve();
  return firstOf(body, 'drain', 'close');
}

/** Resolves at the first of two events, removing both listeners. */
function firstOf(emitter: Pick<StreamingBody, 'on' | 'off'>, a: string, b: string): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      emitter.off(a, done);
      emitter.off(b, done);
      resolve();
    };
    emitter.on(a, done);
    emitter.on(b, done);
  });
}

/**
 * Whether the client's connection for res is gone: a ServerResponse (or an upgrade's) says so itself, an
 * Http2ServerResponse has no 'destroyed' and its stream does.
 */
export function connectionGone(res: object): boolean {
  const r = res as { destroyed?: boolean; stream?: { destroyed?: boolean } };
  return r.destroyed === true || r.stream?.destroyed === true;
}

/**
 * Resolves once res has handed its last byte to the connection, or the connection is gone: flow control holds a
 * request's seats until then, as kube-apiserver holds them until its handler's last write returns.
 */
export function responseDone(res: Response): Promise<void> {
  if ((res as ServerResponse).writableFinished || connectionGone(res)) return Promise.resolve();
  return firstOf(res as unknown as Pick<StreamingBody, 'on' | 'off'>, 'finish', 'close');
}
