// Drives test/clients/informer (a client-go SharedInformer on pods) from vitest: builds it once into the binary
// cache, runs it against a kubeconfig, follows its JSON-lines output and returns its final result.

import { execFile, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export interface InformerEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  namespace: string;
  name: string;
  resourceVersion: string;
  inInitialList?: boolean;
  at: string;
}

export interface InformerRequest {
  method: string;
  url: string;
  status: number;
}

export interface InformerPod {
  namespace: string;
  name: string;
  resourceVersion: string;
  uid: string;
  labels: Record<string, string>;
}

export interface InformerResult {
  synced: boolean;
  syncedAfterMs?: number;
  /** The informer's final store, sorted by namespace/name. */
  pods: InformerPod[];
  events: InformerEvent[];
  /** True if the reflector used a streaming watch-list (watch with sendInitialEvents=true). */
  watchListUsed: boolean;
  requests: InformerRequest[];
  watchErrors: string[];
  stoppedBy: string;
}

/** What the informer has reported so far while it runs. */
export interface InformerState {
  synced: boolean;
  events: InformerEvent[];
  requests: InformerRequest[];
  watchErrors: string[];
  exited: boolean;
  stderr: string;
}

export interface InformerOptions {
  namespace?: string;
  /** Label selector, e.g. "app=web". */
  selector?: string;
  /** Force client-go's WatchListClient feature gate on or off (default: client-go's own default). */
  watchList?: boolean;
}

export interface InformerHandle {
  /**
   * Resolves with the state once pred holds; rejects timeoutMs after the program started (a build before it does
   * not count), or if the program exits first.
   */
  waitFor(pred: (s: InformerState) => boolean, timeoutMs?: number): Promise<InformerState>;
  /** SIGTERMs the program and returns its final result. */
  stop(): Promise<InformerResult>;
  state: InformerState;
}

const HERE = dirname(fileURLToPath(import.meta.url));
let built: Promise<string> | undefined;

/**
 * How long a first build may take: minutes on 2 cores with a cold Go build cache. Suites build in a hook with this
 * timeout (beforeAll(buildInformer, INFORMER_BUILD_TIMEOUT_MS)), not inside a test's own time.
 */
export const INFORMER_BUILD_TIMEOUT_MS = 15 * 60_000;

/** Builds the informer (or reuses the cached binary for these sources) and returns its path. */
export function buildInformer(): Promise<string> {
  built ??= new Promise<string>((resolve, reject) => {
    execFile('bash', [join(HERE, 'build.sh')], { maxBuffer: 4 << 20, timeout: INFORMER_BUILD_TIMEOUT_MS }, (err, stdout, stderr) => {
      if (err) reject(new Error(`test/clients/build.sh failed (${err.message}):\n${String(stderr).slice(-4000)}`));
      else resolve(String(stdout).trim().split('\n').pop()!);
    });
  });
  built.catch(() => (built = undefined));
  return built;
}

export function startInformer(kubeconfig: string, opts: InformerOptions = {}): InformerHandle {
  const state: InformerState = { synced: false, events: [], requests: [], watchErrors: [], exited: false, stderr: '' };
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((l) => l());
  let result: InformerResult | undefined;

  const args = ['--kubeconfig', kubeconfig, '--stop-on-stdin-close'];
  if (opts.namespace) args.push('--namespace', opts.namespace);
  if (opts.selector) args.push('--selector', opts.selector);
  if (opts.watchList !== undefined) args.push('--watch-list', String(opts.watchList));

  const child = buildInformer().then((bin) => {
    // stdin stays an open pipe: if this process dies, the pipe closes and the informer stops by itself.
    const c = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    c.stderr!.setEncoding('utf8').on('data', (d: string) => {
      state.stderr = (state.stderr + d).slice(-20_000);
    });
    createInterface({ input: c.stdout! }).on('line', (line) => {
      let msg: any;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      if (msg.kind === 'event') state.events.push(msg.event);
      else if (msg.kind === 'request') state.requests.push(msg.request);
      else if (msg.kind === 'watchError') state.watchErrors.push(msg.error);
      else if (msg.kind === 'synced') state.synced = true;
      else if (msg.kind === 'result') result = msg.result;
      notify();
    });
    const exited = new Promise<void>((resolve) => {
      c.once('close', () => {
        state.exited = true;
        notify();
        resolve();
      });
    });
    return { c, exited };
  });
  // Surface a failed build through waitFor/stop rather than as an unhandled rejection.
  child.catch(() => undefined);

  return {
    state,
    waitFor(pred, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pred(state)) {
            done();
            resolve(state);
          } else if (state.exited) {
            done();
            reject(new Error(`informer exited before the condition held; stderr:\n${state.stderr.slice(-4000)}`));
          }
        };
        let timer: NodeJS.Timeout | undefined;
        let over = false;
        const done = () => {
          over = true;
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        child.then(
          () => {
            check();
            if (over) return;
            timer = setTimeout(() => {
              done();
              reject(new Error(`informer: condition not met within ${timeoutMs} ms (synced=${state.synced}, ${state.events.length} events); stderr:\n${state.stderr.slice(-4000)}`));
            }, timeoutMs);
          },
          (e) => {
            done();
            reject(e);
          },
        );
      });
    },
    async stop() {
      const { c, exited } = await child;
      if (!state.exited) c.kill('SIGTERM');
      const killer = setTimeout(() => c.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
      if (!result) throw new Error(`informer ended without a result (exit ${c.exitCode}); stderr:\n${state.stderr.slice(-4000)}`);
      return result;
    },
  };
}
