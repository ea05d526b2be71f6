// pods/exec, pods/attach and pods/log of the sim against a local HTTP server, with a real `ws` client speaking the
// channel protocol the way client-go's WebSocket executor does.

import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { KubeObject } from '../../src/api/meta.js';
import { handleExecUpgrade } from '../../test/sim/exec.js';
import { FOLLOW_INTERVAL_MS, servePodLog } from '../../test/sim/podlog.js';

const STARTED = '2026-11-22T10:00:00Z';

function pod(name: string, containers: string[], extra: { init?: string[]; nodeName?: string | null; statuses?: any[] } = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'shop', creationTimestamp: STARTED },
    spec: {
      nodeName: extra.nodeName === null ? undefined : (extra.nodeName ?? 'node-1'),
      ...(extra.init ? { initContainers: extra.init.map((n) => ({ name: n, image: 'busybox' })) } : {}),
      containers: containers.map((n) => ({ name: n, image: 'busybox', env: [{ name: 'MODE', value: 'prod' }] })),
    },
    status: {
      phase: 'Running',
      containerStatuses: extra.statuses ?? containers.map((n) => ({ name: n, ready: true, restartCount: 0, state: { running: { startedAt: STARTED } } })),
    },
  };
}

const pods: Record<string, KubeObject> = {
  'web-0': pod('web-0', ['app']),
  multi: pod('multi', ['a', 'b'], { init: ['init'] }),
  pending: pod('pending', ['app'], { nodeName: null }),
  creating: pod('creating', ['app'], { statuses: [{ name: 'app', state: { waiting: { reason: 'ContainerCreating' } } }] }),
  restarted: pod('restarted', ['app'], {
    statuses: [{
      name: 'app', restartCount: 1, state: { running: { startedAt: '2026-11-22T11:00:00Z' } },
      lastState: { terminated: { exitCode: 137, reason: 'OOMKilled', startedAt: STARTED, finishedAt: '2026-11-22T10:59:00Z', containerID: 'containerd://abc' } },
    }],
  }),
};

let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sim');
    const name = url.pathname.split('/')[6] ?? '';
    servePodLog(req, res, pods[name]!, url.searchParams);
  });
  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://sim');
    const parts = url.pathname.split('/');
    handleExecUpgrade(req, socket, head, pods[parts[6]!]!, url.searchParams, parts[7] as 'exec' | 'attach');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

// ---------------------------------------------------------------------------------------------------------------
// exec / attach

interface Session {
  ws: WebSocket;
  frames: Buffer[];
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the error-channel Status text and the close code once the server closes. */
  done: Promise<{ status: string; code: number }>;
  waitFor: (pred: () => boolean) => Promise<void>;
}

function open(podName: string, sub: 'exec' | 'attach', query: string, protocols = ['v5.channel.k8s.io']): Promise<Session> {
  const ws = new WebSocket(`ws://${base}/api/v1/namespaces/shop/pods/${podName}/${sub}?${query}`, protocols);
  const frames: Buffer[] = [];
  const text = (ch: number) => Buffer.concat(frames.filter((f) => f[0] === ch).map((f) => f.subarray(1))).toString('utf8');
  const listeners = new Set<() => void>();
  ws.on('message', (d: Buffer) => {
    frames.push(Buffer.from(d));
    for (const l of listeners) l();
  });
  const done = new Promise<{ status: string; code: number }>((resolve) => ws.on('close', (code) => resolve({ status: text(3), code })));
  const waitFor = (pred: () => boolean) =>
    new Promise<void>((resolve) => {
      if (pred()) return resolve();
      const l = () => {
        if (pred()) {
          listeners.delete(l);
          resolve();
        }
      };
      listeners.add(l);
    });
  return new Promise((resolve, reject) => {
    ws.on('open', () => resolve({ ws, frames, stdout: () => text(1), stderr: () => text(2), done, waitFor }));
    ws.on('error', reject);
  });
}

const q = (argv: string[], flags: string) => argv.map((a) => `command=${encodeURIComponent(a)}`).join('&') + '&' + flags;
const send = (s: Session, channel: number, data: string) => s.ws.send(Buffer.concat([Buffer.from([channel]), Buffer.from(data)]));

describe('exec over WebSocket', () => {
  it('sh -c "echo hi; exit 3": stdout, then NonZeroExitCode on the error channel, then a normal close', async () => {
    const s = await open('web-0', 'exec', q(['sh', '-c', 'echo hi; exit 3'], 'stdout=true&stderr=true'));
    expect(s.ws.protocol).toBe('v5.channel.k8s.io');
    const { status, code } = await s.done;
    expect(s.frames[0]).toEqual(Buffer.from([1]));
    expect(s.stdout()).toBe('hi\n');
    expect(code).toBe(1000);
    expect(JSON.parse(status)).toEqual({
      metadata: {},
      status: 'Failure',
      message: 'command terminated with non-zero exit code: command terminated with exit code 3',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  });

  it('success is the bare Success status; stderr has its own channel', async () => {
    const s = await open('web-0', 'exec', q(['sh', '-c', 'echo out; ls /nope; true'], 'stdout=1&stderr=1'));
    const { status } = await s.done;
    expect(status).toBe('{"metadata":{},"status":"Success"}');
    expect(s.stdout()).toBe('out\n');
    expect(s.stderr()).toBe('ls: /nope: No such file or directory\n');
  });

  it('speaks v4 too, and runs in the container environment', async () => {
    const s = await open('web-0', 'exec', q(['printenv', 'MODE', 'HOSTNAME'], 'stdout=true'), ['v4.channel.k8s.io']);
    expect(s.ws.protocol).toBe('v4.channel.k8s.io');
    await s.done;
    expect(s.stdout()).toBe('prod\nweb-0\n');
  });

  it('keeps the pace of sleep between outputs', async () => {
    const s = await open('web-0', 'exec', q(['sh', '-c', 'echo a; sleep 0.3; echo b'], 'stdout=true'));
    await s.waitFor(() => s.stdout() === 'a\n');
    const t0 = Date.now();
    await s.waitFor(() => s.stdout() === 'a\nb\n');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect((await s.done).status).toContain('Success');
  });

  it('streams stdin through cat until the client closes stdin (v5 close signal)', async () => {
    const s = await open('web-0', 'exec', q(['cat'], 'stdin=true&stdout=true&stderr=true'));
    send(s, 0, 'abc');
    await s.waitFor(() => s.stdout() === 'abc');
    send(s, 0, 'def\n');
    await s.waitFor(() => s.stdout() === 'abcdef\n');
    s.ws.send(Buffer.from([255, 0]));
    expect((await s.done).status).toBe('{"metadata":{},"status":"Success"}');
  });

  it('runs an interactive sh line by line without a terminal', async () => {
    const s = await open('web-0', 'exec', q(['sh'], 'stdin=true&stdout=true&stderr=true'));
    send(s, 0, 'echo one\nhost');
    await s.waitFor(() => s.stdout() === 'one\n');
    send(s, 0, 'name\nexit 5\necho never\n');
    const { status } = await s.done;
    expect(s.stdout()).toBe('one\nweb-0\n');
    expect(JSON.parse(status).details.causes).toEqual([{ reason: 'ExitCode', message: '5' }]);
  });

  it('gives a terminal: prompt, echo, CRLF, and ^D ends the shell', async () => {
    const s = await open('web-0', 'exec', q(['/bin/sh'], 'stdin=true&stdout=true&stderr=true&tty=true'));
    await s.waitFor(() => s.stdout() === '/ # ');
    s.ws.send(Buffer.concat([Buffer.from([4]), Buffer.from('{"Width":80,"Height":24}')]));
    send(s, 0, 'hostnamx\x7fe\r');
    await s.waitFor(() => s.stdout().endsWith('web-0\r\n/ # '));
    expect(s.stdout()).toBe('/ # hostnamx\b \be\r\nweb-0\r\n/ # ');
    send(s, 0, 'false\r');
    await s.waitFor(() => s.stdout().endsWith('false\r\n/ # '));
    send(s, 0, '\x04');
    const { status } = await s.done;
    expect(JSON.parse(status).details.causes[0].message).toBe('1');
    // No stderr channel on a terminal.
    expect(s.frames.some((f) => f[0] === 2)).toBe(false);
  });

  it('a missing executable is an InternalError status, as the runtime reports it', async () => {
    const s = await open('web-0', 'exec', q(['nosuchcmd'], 'stdout=true&stderr=true'));
    const st = JSON.parse((await s.done).status);
    expect(st.code).toBe(500);
    expect(st.reason).toBe('InternalError');
    expect(st.message).toMatch(/^Internal error occurred: Internal error occurred: error executing command in container: .*exec: "nosuchcmd": executable file not found in \$PATH: unknown$/);
  });

  it('attach without stdin follows the process output until the client leaves', async () => {
    const s = await open('web-0', 'attach', 'stdout=true&stderr=true');
    await s.waitFor(() => s.stdout().includes('n=2\n'));
    expect(s.stdout()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ INFO web-0\/app request handled n=1\n/);
    s.ws.close();
    expect((await s.done).code).toBe(1005);
  });
});

describe('exec and attach refused before the upgrade', () => {
  function rawUpgrade(path: string, headers: Record<string, string>): Promise<{ code: number; body: any }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: base.split(':')[0], port: Number(base.split(':')[1]), path, headers: { Connection: 'Upgrade', ...headers } });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ code: res.statusCode!, body: JSON.parse(body) }));
      });
      req.on('upgrade', () => reject(new Error('unexpected upgrade')));
      req.on('error', reject);
      req.end();
    });
  }
  const wsHeaders = (protocol: string) => ({
    Upgrade: 'websocket',
    'Sec-WebSocket-Version': '13',
    'Sec-WebSocket-Key': Buffer.from('0123456789abcdef').toString('base64'),
    'Sec-WebSocket-Protocol': protocol,
  });

  it('needs a container name for a multi-container pod, and a valid one', async () => {
    const a = await rawUpgrade('/api/v1/namespaces/shop/pods/multi/exec?command=ls&stdout=true', wsHeaders('v5.channel.k8s.io'));
    expect(a).toEqual({
      code: 400,
      body: {
        kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'BadRequest', code: 400,
        message: 'a container name must be specified for pod multi, choose one of: [init a b]',
      },
    });
    const b = await rawUpgrade('/api/v1/namespaces/shop/pods/multi/exec?command=ls&stdout=true&container=z', wsHeaders('v5.channel.k8s.io'));
    expect(b.body.message).toBe('container z is not valid for pod multi');
  });

  it('refuses unsupported subprotocols and SPDY with 403', async () => {
    const a = await rawUpgrade('/api/v1/namespaces/shop/pods/web-0/exec?command=ls&stdout=true', wsHeaders('channel.k8s.io, base64.channel.k8s.io'));
    expect(a.code).toBe(403);
    expect(a.body.message).toBe('requested protocol(s) are not supported: [channel.k8s.io base64.channel.k8s.io]; supports [v5.channel.k8s.io v4.channel.k8s.io]');
    const b = await rawUpgrade('/api/v1/namespaces/shop/pods/web-0/exec?command=ls&stdout=true', {
      Upgrade: 'SPDY/3.1',
      'X-Stream-Protocol-Version': 'v4.channel.k8s.io',
    });
    expect(b.code).toBe(403);
    expect(b.body.message).toBe('unable to upgrade: unable to negotiate protocol: client supports [v4.channel.k8s.io], server accepts [v5.channel.k8s.io v4.channel.k8s.io]');
  });

  it('needs a stream, a host and a running container', async () => {
    const none = await rawUpgrade('/api/v1/namespaces/shop/pods/web-0/exec?command=ls', wsHeaders('v5.channel.k8s.io'));
    expect(none.body.message).toBe('you must specify at least 1 of stdin, stdout, stderr');
    const pending = await rawUpgrade('/api/v1/namespaces/shop/pods/pending/exec?command=ls&stdout=1', wsHeaders('v5.channel.k8s.io'));
    expect(pending.body.message).toBe('pod pending does not have a host assigned');
    const creating = await rawUpgrade('/api/v1/namespaces/shop/pods/creating/exec?command=ls&stdout=1', wsHeaders('v5.channel.k8s.io'));
    expect(creating).toMatchObject({ code: 404, body: { message: 'container not found ("app")' } });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// logs

function getLog(podName: string, query = ''): Promise<{ code: number; type: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`http://${base}/api/v1/namespaces/shop/pods/${podName}/log?${query}`, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ code: res.statusCode!, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('pods/log', () => {
  it('writes deterministic lines as text/plain', async () => {
    const r = await getLog('web-0');
    expect(r.code).toBe(200);
    expect(r.type).toBe('text/plain');
    const lines = r.body.split('\n');
    expect(lines).toHaveLength(21);
    expect(lines[0]).toBe('2026-11-22T10:00:00Z INFO web-0/app request handled n=1');
    expect(lines[19]).toBe('2026-11-22T10:00:19Z INFO web-0/app request handled n=20');
    expect((await getLog('web-0')).body).toBe(r.body);
  });

  it('honours tailLines, timestamps and limitBytes', async () => {
    expect((await getLog('web-0', 'tailLines=2')).body).toBe(
      '2026-11-22T10:00:18Z INFO web-0/app request handled n=19\n2026-11-22T10:00:19Z INFO web-0/app request handled n=20\n',
    );
    expect((await getLog('web-0', 'tailLines=1&timestamps=true')).body).toBe('2026-11-22T10:00:19Z 2026-11-22T10:00:19Z INFO web-0/app request handled n=20\n');
    expect((await getLog('web-0', 'limitBytes=10')).body).toBe('2026-11-22');
    expect((await getLog('web-0', 'tailLines=0')).body).toBe('');
    // Every line is from 2026-11-22 10:00, long before "now minus one hour".
    expect((await getLog('web-0', 'sinceSeconds=3600')).body).toBe('');
    expect((await getLog('web-0', 'sinceTime=2026-11-22T10:00:18Z')).body.split('\n')).toHaveLength(3);
  });

  it('chooses the container as the apiserver does', async () => {
    expect(await getLog('multi')).toMatchObject({ code: 400 });
    expect(JSON.parse((await getLog('multi')).body).message).toBe('a container name must be specified for pod multi, choose one of: [init a b]');
    expect(JSON.parse((await getLog('multi', 'container=y')).body).message).toBe('container y is not valid for pod multi');
    expect((await getLog('multi', 'container=b&tailLines=1')).body).toBe('2026-11-22T10:00:19Z INFO multi/b request handled n=20\n');
  });

  it('validates PodLogOptions with a 422', async () => {
    const r = await getLog('web-0', 'tailLines=-1&limitBytes=0');
    expect(r.code).toBe(422);
    expect(JSON.parse(r.body).message).toBe(
      'PodLogOptions "web-0" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]',
    );
    expect(JSON.parse((await getLog('web-0', 'sinceSeconds=5&sinceTime=2026-11-22T10:00:00Z')).body).message).toBe(
      'PodLogOptions "web-0" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified',
    );
  });

  it('previous needs a terminated previous instance, as the kubelet says', async () => {
    const r = await getLog('web-0', 'previous=true');
    expect(r.code).toBe(400);
    expect(JSON.parse(r.body).message).toBe('previous terminated container "app" in pod "web-0" not found');
    const prev = await getLog('restarted', 'previous=true&tailLines=2');
    expect(prev.body).toBe('2026-11-22T10:00:19Z INFO restarted/app request handled n=20\n2026-11-22T10:00:20Z ERROR restarted/app exiting code=137\n');
    expect((await getLog('restarted', 'tailLines=1')).body).toBe('2026-11-22T11:00:19Z INFO restarted/app request handled n=20\n');
  });

  it('waiting containers and unscheduled pods', async () => {
    const w = await getLog('creating');
    expect(w.code).toBe(400);
    expect(JSON.parse(w.body).message).toBe('container "app" in pod "creating" is waiting to start: ContainerCreating');
    expect(await getLog('pending')).toMatchObject({ code: 204, body: '' });
  });

  it('follow keeps writing new lines and stops its timer when the client goes away', async () => {
    const setSpy = vi.spyOn(globalThis, 'setInterval');
    const clearSpy = vi.spyOn(globalThis, 'clearInterval');
    try {
      let received = '';
      const req = request(`http://${base}/api/v1/namespaces/shop/pods/web-0/log?follow=true&tailLines=1`);
      await new Promise<void>((resolve, reject) => {
        req.on('response', (res) => {
          res.on('data', (d) => {
            received += d;
            if (received.includes('n=22\n')) resolve();
          });
        });
        req.on('error', (e) => ((e as any).code === 'ECONNRESET' ? undefined : reject(e)));
        req.end();
      });
      const lines = received.trimEnd().split('\n');
      expect(lines[0]).toBe('2026-11-22T10:00:19Z INFO web-0/app request handled n=20');
      expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ INFO web-0\/app request handled n=21$/);
      const follow = setSpy.mock.results.find((r, i) => setSpy.mock.calls[i]![1] === FOLLOW_INTERVAL_MS)?.value;
      expect(follow).toBeDefined();
      expect(clearSpy.mock.calls.some((c) => c[0] === follow)).toBe(false);
      req.destroy();
      await new Promise<void>((resolve) => {
        const poll = () => (clearSpy.mock.calls.some((c) => c[0] === follow) ? resolve() : setTimeout(poll, 10));
        poll();
      });
    } finally {
      setSpy.mockRestore();
      clearSpy.mockRestore();
    }
  });
});
