// Writing answers the way kube-apiserver does: every error a Status, with the headers clients and caches expect.

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
