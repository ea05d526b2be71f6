// pods/exec and pods/attach for the sim over WebSocket, speaking the channel protocol kubectl 1.30+ uses
// (v5.channel.k8s.io; v4 for older WebSocket clients): every binary message starts with a channel byte
// (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize; in v5, 255 closes the stream named by the next byte).
// Commands run through shell.ts. The session ends the way the apiserver's stream translator ends one: a Status on
// the error channel (Success, or Failure/NonZeroExitCode with an ExitCode cause), then a normal close.
// SPDY is not spoken: kubectl 1.30+ only falls back to it when the WebSocket upgrade fails, which it does not here.

import { createHash } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { KubeObject } from '../../src/api/meta.js';
import { newBadRequest, statusBody, StatusError, type Status } from '../../src/api/status.js';
import { FOLLOW_INTERVAL_MS, queryBool, validateContainer } from './podlog.js';
import {
  isInteractiveShell,
  isKnownCommand,
  newShellState,
  prompt,
  readsStdin,
  runCommandSteps,
  runShellLine,
  type ShellEnv,
  type ShellStep,
} from './shell.js';

export const PROTOCOL_V5 = 'v5.channel.k8s.io';
export const PROTOCOL_V4 = 'v4.channel.k8s.io';
const SUPPORTED = [PROTOCOL_V5, PROTOCOL_V4];

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const STREAM_CLOSE = 255;

interface StreamOptions {
  command: string[];
  container: string;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

// One server for all upgrades; it only does handshakes. The subprotocol is the client's first supported one, as
// the Go handshake picks it.
const wss = new WebSocketServer({
  noServer: true,
  handleProtocols: (protocols) => {
    for (const p of protocols) if (SUPPORTED.includes(p)) return p;
    return false;
  },
});

/**
 * Takes over an upgrade request for pods/{exec,attach}: validates it (answering a Status over plain HTTP/1.1
 * when it cannot proceed), then runs the session on the WebSocket. The caller has authenticated, authorized and
 * found the pod.
 */
export function handleExecUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  pod: KubeObject,
  q: URLSearchParams,
  subresource: 'exec' | 'attach',
): void {
  // A client that vanishes mid-handshake must not crash the server.
  socket.on('error', () => {});
  let opts: StreamOptions;
  try {
    opts = parseOptions(pod, q, subresource);
    checkUpgrade(req);
    checkContainerRunning(pod, opts.container);
  } catch (err) {
    if (!(err instanceof StatusError)) throw err;
    rejectUpgrade(socket, err.status);
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => runSession(ws, pod, opts, subresource));
}

// ---------------------------------------------------------------------------------------------------------------
// Before the upgrade.

function parseOptions(pod: KubeObject, q: URLSearchParams, subresource: 'exec' | 'attach'): StreamOptions {
  const name = pod.metadata.name ?? '';
  // streamLocation: container choice first, then the node.
  const container = validateContainer(pod, q.get('container') ?? '');
  if (!(pod as any).spec?.nodeName) throw newBadRequest(`pod ${name} does not have a host assigned`);
  const opts: StreamOptions = {
    command: subresource === 'exec' ? q.getAll('command') : [],
    container,
    stdin: queryBool(q, 'stdin'),
    stdout: queryBool(q, 'stdout'),
    stderr: queryBool(q, 'stderr'),
    tty: queryBool(q, 'tty'),
  };
  // remotecommand.NewOptions: a terminal has no separate stderr.
  if (opts.tty && opts.stderr) opts.stderr = false;
  if (!opts.stdin && !opts.stdout && !opts.stderr) throw newBadRequest('you must specify at least 1 of stdin, stdout, stderr');
  if (subresource === 'exec' && opts.command.length === 0) throw newBadRequest('you must specify at least one command for the container');
  return opts;
}

function checkUpgrade(req: IncomingMessage): void {
  const upgrade = (req.headers.upgrade ?? '').toLowerCase();
  if (upgrade.startsWith('spdy/')) {
    // What the kubelet's httpstream handshake answers when no protocol version matches.
    const offered = headerList(req.headers['x-stream-protocol-version']);
    throw forbidden(`unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${SUPPORTED.join(' ')}]`);
  }
  if (upgrade !== 'websocket') throw newBadRequest('Upgrade request required');
  const offered = headerList(req.headers['sec-websocket-protocol']);
  if (!offered.some((p) => SUPPORTED.includes(p))) {
    // The Go websocket handshake refuses with 403.
    throw forbidden(`requested protocol(s) are not supported: [${offered.join(' ')}]; supports [${SUPPORTED.join(' ')}]`);
  }
}

/** The kubelet finds no running container to exec in: `unable to upgrade connection: container not found ("c")`. */
function checkContainerRunning(pod: KubeObject, container: string): void {
  const status = (pod as any).status ?? {};
  for (const list of [status.containerStatuses, status.initContainerStatuses, status.ephemeralContainerStatuses]) {
    if (!Array.isArray(list)) continue;
    const s = list.find((x: any) => x?.name === container);
    if (!s) continue;
    if (s.state && !s.state.running) {
      throw new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `container not found (${JSON.stringify(container)})`, reason: 'NotFound', code: 404 });
    }
    return;
  }
}

function forbidden(message: string): StatusError {
  return new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: 'Forbidden', code: 403 });
}

function headerList(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).flatMap((x) => x.split(',')).map((x) => x.trim()).filter((x) => x !== '');
}

function rejectUpgrade(socket: Duplex, s: Status): void {
  const body = statusBody(s);
  socket.end(
    `HTTP/1.1 ${s.code} ${STATUS_CODES[s.code] ?? ''}\r\n` +
      'Content-Type: application/json\r\n' +
      'Cache-Control: no-cache, private\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// The session.

/** The kubelet's Success status (no kind, no code: json.Marshal of a bare metav1.Status). */
const SUCCESS = { metadata: {}, status: 'Success' };

/** codeExitToStatusError in the apiserver's stream translator. */
function exitStatus(code: number): object {
  if (code === 0) return SUCCESS;
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: command terminated with exit code ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

/** apierrors.NewInternalError as written on the error channel. */
function internalErrorStatus(text: string): object {
  return {
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: ${text}`,
    reason: 'InternalError',
    details: { causes: [{ message: text }] },
    code: 500,
  };
}

function runSession(ws: WebSocket, pod: KubeObject, opts: StreamOptions, subresource: 'exec' | 'attach'): void {
  const v5 = ws.protocol === PROTOCOL_V5;
  const timers = new Set<NodeJS.Timeout>();
  let finished = false;
  let onStdin: (data: Buffer) => void = () => {};
  let onStdinEnd: () => void = () => {};
  let stdinEnded = false;

  const send = (channel: number, data: Buffer | string): void => {
    if (ws.readyState !== ws.OPEN) return;
    const payload = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const frame = Buffer.allocUnsafe(payload.length + 1);
    frame[0] = channel;
    payload.copy(frame, 1);
    ws.send(frame, { binary: true });
  };
  const write = (stream: 'stdout' | 'stderr', data: string): void => {
    if (data === '' || finished) return;
    // A terminal merges stderr into stdout and turns \n into \r\n (onlcr).
    if (opts.tty) {
      if (opts.stdout) send(STDOUT, data.replace(/\r?\n/g, '\r\n'));
      return;
    }
    if (stream === 'stdout' && opts.stdout) send(STDOUT, data);
    else if (stream === 'stderr' && opts.stderr) send(STDERR, data);
  };
  const stopTimers = (): void => {
    for (const t of timers) {
      clearTimeout(t);
      clearInterval(t);
    }
    timers.clear();
  };
  const finish = (status: object): void => {
    if (finished) return;
    finished = true;
    stopTimers();
    send(ERROR, JSON.stringify(status));
    ws.close(1000);
  };
  const delay = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });
  const play = async (steps: ShellStep[]): Promise<void> => {
    for (const s of steps) {
      if (finished) return;
      if ('sleepMs' in s) await delay(s.sleepMs);
      else write(s.stream, s.data);
    }
  };

  ws.on('error', () => {});
  ws.on('close', () => {
    finished = true;
    stopTimers();
  });
  ws.on('message', (raw: RawData) => {
    const data = Array.isArray(raw) ? Buffer.concat(raw) : Buffer.isBuffer(raw) ? raw : Buffer.from(raw);
    if (data.length === 0 || finished) return;
    const channel = data[0]!;
    if (v5 && channel === STREAM_CLOSE) {
      if (data.length === 2 && data[1] === STDIN && !stdinEnded) {
        stdinEnded = true;
        onStdinEnd();
      }
      return;
    }
    // RESIZE carries {"Width":w,"Height":h}; the simulated terminal has no size to change.
    if (channel === RESIZE) return;
    if (channel === STDIN && opts.stdin && !stdinEnded) onStdin(data.subarray(1));
  });

  // Tell the client the streams are up: an empty message on the lowest writable channel.
  send(opts.stdout ? STDOUT : opts.stderr ? STDERR : ERROR, Buffer.alloc(0));

  const spec = (pod as any).spec ?? {};
  const container = (Array.isArray(spec.containers) ? spec.containers : []).find((c: any) => c?.name === opts.container);
  const env: ShellEnv = {
    podName: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
    container: opts.container,
    hostname: podHostname(pod),
    vars: containerVars(container),
    tty: opts.tty,
  };
  const io = {
    setStdin: (fn: (d: Buffer) => void) => (onStdin = fn),
    setStdinEnd: (fn: () => void) => (onStdinEnd = fn),
  };

  if (subresource === 'attach') {
    if (opts.stdin) return interactive(env, opts, io, write, play, finish, () => finished);
    // Attached to a process that does not read stdin: its output, as it writes it, until the client leaves.
    let n = 1;
    const t = setInterval(() => {
      write('stdout', `${new Date().toISOString().slice(0, 19)}Z INFO ${env.podName}/${env.container} request handled n=${n++}\n`);
    }, FOLLOW_INTERVAL_MS);
    timers.add(t);
    return;
  }

  const argv = opts.command;
  if (!isKnownCommand(argv[0]!)) {
    const execId = createHash('sha256').update(`${env.namespace}/${env.podName}/${env.container}\0${argv.join('\0')}`).digest('hex');
    const inner =
      `error executing command in container: failed to exec in container: failed to start exec ${JSON.stringify(execId)}: ` +
      `OCI runtime exec failed: exec failed: unable to start container process: exec: ${JSON.stringify(argv[0])}: executable file not found in $PATH: unknown`;
    // The kubelet's InternalError, re-wrapped by the apiserver's stream translator.
    return finish(internalErrorStatus(`Internal error occurred: ${inner}`));
  }
  if (opts.stdin && isInteractiveShell(argv)) return interactive(env, opts, io, write, play, finish, () => finished);
  if (opts.stdin && readsStdin(argv)) {
    if (argv.length === 1) {
      // Plain `cat`: echo input as it arrives.
      io.setStdin((d) => write('stdout', d.toString('utf8')));
      io.setStdinEnd(() => finish(SUCCESS));
      return;
    }
    let input = '';
    io.setStdin((d) => (input += d.toString('utf8')));
    io.setStdinEnd(() => {
      const r = runCommandSteps(argv, env, input);
      void play(r.steps).then(() => finish(exitStatus(r.exitCode)));
    });
    return;
  }
  const r = runCommandSteps(argv, env, '');
  void play(r.steps).then(() => finish(exitStatus(r.exitCode)));
}

/**
 * A shell reading commands from stdin. On a terminal: prompt, echo, line editing (backspace, ^C, ^D on an empty
 * line); otherwise lines run as they complete and end of input ends the shell with the last status.
 */
function interactive(
  env: ShellEnv,
  opts: StreamOptions,
  io: { setStdin: (fn: (d: Buffer) => void) => void; setStdinEnd: (fn: () => void) => void },
  write: (stream: 'stdout' | 'stderr', data: string) => void,
  play: (steps: ShellStep[]) => Promise<void>,
  finish: (status: object) => void,
  isFinished: () => boolean,
): void {
  const state = newShellState(env);
  let line = '';
  let lastWasCR = false;
  // Input is handled strictly in order, even across a `sleep` inside a line.
  let queue: Promise<void> = Promise.resolve();
  const enqueue = (fn: () => Promise<void> | void): void => {
    queue = queue.then(fn).catch(() => {});
  };

  const runLine = async (text: string): Promise<void> => {
    const r = runShellLine(text, state, env);
    await play(r.steps);
    if (r.exit !== undefined) finish(exitStatus(r.exit));
  };

  const feed = async (text: string): Promise<void> => {
    for (const c of text) {
      if (isFinished()) return;
      if (!opts.tty) {
        if (c === '\n') {
          const l = line;
          line = '';
          await runLine(l);
        } else line += c;
        continue;
      }
      const wasCR = lastWasCR;
      lastWasCR = c === '\r';
      if (c === '\n' && wasCR) continue;
      if (c === '\r' || c === '\n') {
        write('stdout', '\r\n');
        const l = line;
        line = '';
        await runLine(l);
        if (!isFinished()) write('stdout', prompt(state));
      } else if (c === '\x7f' || c === '\b') {
        if (line !== '') {
          line = line.slice(0, -1);
          write('stdout', '\b \b');
        }
      } else if (c === '\x03') {
        write('stdout', '^C\r\n');
        line = '';
        state.lastStatus = 130;
        write('stdout', prompt(state));
      } else if (c === '\x04') {
        if (line === '') {
          write('stdout', '\r\n');
          finish(exitStatus(state.lastStatus));
          return;
        }
      } else {
        line += c;
        write('stdout', c);
      }
    }
  };

  if (opts.tty) write('stdout', prompt(state));
  io.setStdin((d) => enqueue(() => feed(d.toString('utf8'))));
  io.setStdinEnd(() =>
    enqueue(async () => {
      if (line !== '' && !opts.tty) await runLine(line);
      line = '';
      finish(exitStatus(state.lastStatus));
    }),
  );
}

/** The kubelet's pod hostname: spec.hostname, else the pod name cut to 63 characters without a trailing - or . */
function podHostname(pod: KubeObject): string {
  const h = (pod as any).spec?.hostname;
  if (typeof h === 'string' && h !== '') return h;
  return (pod.metadata.name ?? '').slice(0, 63).replace(/[-.]+$/, '');
}

/** Literal env values of the container (valueFrom would need the referenced objects). */
function containerVars(container: any): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const e of Array.isArray(container?.env) ? container.env : []) {
    if (e && typeof e.name === 'string' && typeof e.value === 'string') vars[e.name] = e.value;
  }
  return vars;
}
