// Seeing what a response writes, as the audit filter's response writer does: the status code when the head goes
// out (ResponseStarted for long-running requests), and, when the event needs it, the body up to a limit. The
// response's own methods are wrapped on the instance, so whatever writes it (forwarding, a Status, health) is seen.
// Upgrade tunnels have no response object: their status line is read from the first bytes written to the socket.

import type { Duplex } from 'node:stream';
import type { Response } from '../server/context.js';

export interface Captured {
  /** 0 until the head is written. */
  code: number;
  contentType?: string;
  contentEncoding?: string;
  /** Body chunks kept (only when the head asked for them). */
  chunks: Buffer[] | null;
  bytes: number;
  /** The body went past the limit; what was kept is incomplete and must not be used. */
  overflow: boolean;
}

export interface CaptureHooks {
  /** Called once, when the head is written; returns the body limit to keep (0: keep nothing). */
  onHead(c: Captured): number;
}

export function captureResponse(res: Response, hooks: CaptureHooks): Captured {
  const c: Captured = { code: 0, chunks: null, bytes: 0, overflow: false };
  let limit = 0;
  const r = res as any;
  const origWriteHead = r.writeHead;
  const origWrite = r.write;
  const origEnd = r.end;
  let inEnd = false;
  let wroteDuringEnd = false;

  const head = (code: number, headers: unknown) => {
    if (c.code !== 0) return;
    c.code = code || 200;
    c.contentType = headerValue(headers, 'content-type') ?? str(res.getHeader('content-type'));
    c.contentEncoding = headerValue(headers, 'content-encoding') ?? str(res.getHeader('content-encoding'));
    limit = hooks.onHead(c);
    if (limit > 0) c.chunks = [];
  };
  const keep = (chunk: unknown, encoding: unknown) => {
    if (c.chunks === null || c.overflow || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const b = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : (chunk as Buffer);
    if (c.bytes + b.length > limit) {
      c.overflow = true;
      c.chunks = [];
      return;
    }
    c.chunks.push(b);
    c.bytes += b.length;
  };

  r.writeHead = function (code: number, a?: unknown, b?: unknown) {
    head(code, typeof a === 'string' ? b : a);
    return origWriteHead.apply(this, arguments);
  };
  r.write = function (chunk: unknown, encoding?: unknown) {
    if (c.code === 0) head(res.statusCode, undefined);
    if (inEnd) wroteDuringEnd = true;
    keep(chunk, encoding);
    return origWrite.apply(this, arguments);
  };
  r.end = function (chunk?: unknown, encoding?: unknown) {
    if (c.code === 0) head(res.statusCode, undefined);
    inEnd = true;
    wroteDuringEnd = false;
    try {
      return origEnd.apply(this, arguments);
    } finally {
      inEnd = false;
      // HTTP/2's end() writes its chunk through write(), which kept it already.
      if (!wroteDuringEnd) keep(chunk, encoding);
    }
  };
  return c;
}

/** The code of an upgrade answer, read from the status line of the first bytes written to the client socket. */
export function captureUpgrade(socket: Duplex, onHead: (code: number) => void): void {
  const s = socket as any;
  const origWrite = s.write;
  const origEnd = s.end;
  let seen = false;
  const sniff = (chunk: unknown) => {
    if (seen || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    seen = true;
    const text = typeof chunk === 'string' ? chunk.slice(0, 16) : Buffer.isBuffer(chunk) ? chunk.toString('latin1', 0, 16) : '';
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
    onHead(m ? Number(m[1]) : 0);
  };
  s.write = function (chunk: unknown) {
    sniff(chunk);
    return origWrite.apply(this, arguments);
  };
  s.end = function (chunk?: unknown) {
    sniff(chunk);
    return origEnd.apply(this, arguments);
  };
}

/** The body that was kept, or null when there is none or it was cut off. */
export function capturedBody(c: Captured): Buffer | null {
  if (c.chunks === null || c.overflow || c.bytes === 0) return null;
  return c.chunks.length === 1 ? c.chunks[0]! : Buffer.concat(c.chunks, c.bytes);
}

function headerValue(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  if (Array.isArray(headers)) {
    // Raw headers: [k, v, k, v] or [[k, v], ...].
    if (headers.length > 0 && Array.isArray(headers[0])) {
      for (const [k, v] of headers as [string, unknown][]) if (String(k).toLowerCase() === name) return str(v);
      return undefined;
    }
    for (let i = 0; i + 1 < headers.length; i += 2) if (String(headers[i]).toLowerCase() === name) return str(headers[i + 1]);
    return undefined;
  }
  // Forwarded and cached responses name their headers in lower case: look the name up before walking the keys.
  const direct = (headers as Record<string, unknown>)[name];
  if (direct !== undefined) return str(direct);
  for (const k of Object.keys(headers)) if (k.toLowerCase() === name) return str((headers as Record<string, unknown>)[k]);
  return undefined;
}

function str(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (Array.isArray(v)) return v.length > 0 ? String(v[0]) : undefined;
  return String(v);
}
