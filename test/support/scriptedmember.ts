// A member cluster that answers its requests from a script, for driving a real reflector through exact byte
// streams: each request takes the next step; once the script is used up, a request is a watch that stays open
// and silent until close().

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeObject } from '../../src/api/meta.js';

export type Step = (req: IncomingMessage, res: ServerResponse) => void;

export interface ScriptedMember {
  url: string;
  /** The query of every request, in order. */
  requests: URLSearchParams[];
  close(): Promise<void>;
}

export async function scriptedMember(steps: Step[]): Promise<ScriptedMember> {
  const requests: URLSearchParams[] = [];
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    requests.push(new URL(req.url!, 'http://x').searchParams);
    const step = steps.shift();
    if (step) step(req, res);
    else {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      open.add(res);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async close() {
      for (const r of open) r.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A pod list at rv. */
export const podList =
  (rv: string, items: KubeObject[] = []): Step =>
  (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: rv }, items }));
  };

/** A watch that writes body in pieces cut at the given offsets, a few ms apart, then ends. */
export const watchBytes =
  (body: Buffer, cutAt: number[] = []): Step =>
  (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders();
    const bounds = [0, ...cutAt.filter((c) => c > 0 && c < body.length).sort((a, b) => a - b), body.length];
    let i = 0;
    const next = () => {
      if (i + 1 >= bounds.length) return void setTimeout(() => res.end(), 5);
      res.write(body.subarray(bounds[i], bounds[i + 1]));
      i++;
      setTimeout(next, 2);
    };
    next();
  };
