// /livez, /readyz and /healthz as k8s.io/apiserver's healthz package serves them: "ok", ?verbose listings,
// ?exclude=NAME, per-check paths (/readyz/NAME), and reasons withheld from the response (they go to the log).

import type { RequestContext } from './context.js';

export interface HealthCheck {
  name: string;
  /** Resolves when healthy; rejects with the reason otherwise. */
  check(): Promise<void>;
  /** Lines shown under the check in ?verbose listings (per-member cache state, say). */
  details?(): string[];
}

export interface HealthEndpoints {
  livez: HealthCheck[];
  readyz: HealthCheck[];
}

const PATH = /^\/(livez|readyz|healthz)(?:\/([^/]+(?:\/[^/]+)*))?\/?$/;

export function isHealthPath(path: string): boolean {
  return PATH.test(path);
}

export async function serveHealth(ctx: RequestContext, checks: HealthEndpoints): Promise<void> {
  const m = PATH.exec(ctx.url.pathname)!;
  const kind = m[1] as 'livez' | 'readyz' | 'healthz';
  const list = kind === 'livez' ? checks.livez : checks.readyz;
  const res = ctx.res;
  const headers = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache, private' };
  const one = m[2];
  if (one) {
    const c = list.find((x) => x.name === one);
    if (!c) {
      res.writeHead(404, headers);
      res.end('404 page not found\n');
      return;
    }
    try {
      await c.check();
      res.writeHead(200, headers);
      res.end('ok');
    } catch (e) {
      ctx.log.warn({ check: c.name, err: String((e as Error)?.message ?? e) }, `${kind} check failed`);
      res.writeHead(500, headers);
      res.end(`internal server error: ${c.name} check failed\n`);
    }
    return;
  }
  const q = ctx.url.searchParams;
  const excluded = new Set(q.getAll('exclude'));
  const verbose = q.has('verbose');
  const results = await Promise.all(
    list.map(async (c) => {
      if (excluded.has(c.name)) return { name: c.name, line: `[+]${c.name} excluded: ok`, ok: true };
      const more = c.details ? c.details().map((d) => `\n    ${d}`).join('') : '';
      try {
        await c.check();
        return { name: c.name, line: `[+]${c.name} ok${more}`, ok: true };
      } catch (e) {
        ctx.log.warn({ check: c.name, err: String((e as Error)?.message ?? e) }, `${kind} check failed`);
        return { name: c.name, line: `[-]${c.name} failed: reason withheld${more}`, ok: false };
      }
    }),
  );
  const failed = results.some((r) => !r.ok);
  if (!failed && !verbose) {
    res.writeHead(200, headers);
    res.end('ok');
    return;
  }
  const body = results.map((r) => r.line).join('\n') + `\n${kind} check ${failed ? 'failed' : 'passed'}\n`;
  res.writeHead(failed ? 500 : 200, headers);
  res.end(body);
}
