// A tiny deterministic shell for the sim's exec and attach: enough of busybox sh that `kubectl exec` demos, tests
// and benchmarks see believable output (echo, hostname, env, cat /etc/hostname, sh -c "a; b && c", exit codes,
// an interactive `sh` fed line by line) without a container runtime. Synchronous by design: `sleep` does not
// block, it becomes a step the streaming caller (exec.ts) waits out, so output keeps its timing there.

export interface ShellEnv {
  podName: string;
  namespace: string;
  container: string;
  hostname: string;
  /** The container's environment (spec.containers[].env values), printed by `env` and expanded as $NAME. */
  vars?: Record<string, string>;
  /** Set when stdin is a terminal: prompts, TERM=xterm, `ls` in columns. */
  tty?: boolean;
  /** Clock for `date`; tests pin it. */
  now?: () => Date;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  /**
   * Set when the runtime could not start the command at all (no such executable). The kubelet reports that as an
   * error Status, not as an exit code, so exec.ts turns it into an InternalError on the error channel.
   */
  startError?: string;
}

/** One thing the command did, in order: output on a stream, or a pause (`sleep`). */
export type ShellStep = { stream: 'stdout' | 'stderr'; data: string } | { sleepMs: number };

export interface StepsResult {
  steps: ShellStep[];
  exitCode: number;
  startError?: string;
}

/** Mutable state of one shell process: what `cd`, assignments and `$?` change. */
export interface ShellState {
  cwd: string;
  vars: Map<string, string>;
  lastStatus: number;
}

// `sleep` is capped so a demo command cannot hold a test or a benchmark worker for long.
const MAX_SLEEP_MS = 10_000;
const SHELLS = new Set(['sh', 'bash', 'ash', '/bin/sh', '/bin/bash', '/bin/ash', '/usr/bin/bash']);

/** Runs argv as the container runtime would (no shell unless argv[0] is one) and collects its output. */
export function runCommand(argv: string[], env: ShellEnv, stdin?: string): CommandResult {
  const r = runCommandSteps(argv, env, stdin);
  let stdout = '';
  let stderr = '';
  for (const s of r.steps) {
    if ('sleepMs' in s) continue;
    if (s.stream === 'stdout') stdout += s.data;
    else stderr += s.data;
  }
  const out: CommandResult = { stdout, stderr, exitCode: r.exitCode };
  if (r.startError !== undefined) out.startError = r.startError;
  return out;
}

/** Like runCommand, keeping the order of output and pauses for a streaming caller. */
export function runCommandSteps(argv: string[], env: ShellEnv, stdin?: string): StepsResult {
  const state = newShellState(env);
  const steps: ShellStep[] = [];
  if (argv.length === 0) return { steps, exitCode: 0, startError: 'no command given' };
  if (!isKnownCommand(argv[0]!)) {
    return { steps, exitCode: 126, startError: startErrorFor(argv[0]!) };
  }
  const res = runArgv(argv, state, env, stdin ?? '', steps);
  return { steps, exitCode: res.exit ?? state.lastStatus };
}

/** True when argv's program reads stdin before it can finish (cat without files, a shell without -c). */
export function readsStdin(argv: string[]): boolean {
  if (argv.length === 0) return false;
  const prog = basename(argv[0]!);
  if (prog === 'cat') return argv.length === 1 || argv.slice(1).includes('-');
  if (SHELLS.has(argv[0]!) || SHELLS.has(prog)) return !argv.slice(1).some((a) => a === '-c');
  return false;
}

/** True when argv starts an interactive shell that reads commands from stdin line by line. */
export function isInteractiveShell(argv: string[]): boolean {
  if (argv.length === 0) return false;
  return (SHELLS.has(argv[0]!) || SHELLS.has(basename(argv[0]!))) && !argv.slice(1).some((a) => a === '-c');
}

export function newShellState(env: ShellEnv): ShellState {
  const vars = new Map<string, string>();
  for (const [k, v] of environment(env)) vars.set(k, v);
  return { cwd: '/', vars, lastStatus: 0 };
}

/** The prompt busybox sh shows root on a terminal: the working directory, then " # ". */
export function prompt(state: ShellState): string {
  return `${state.cwd} # `;
}

/**
 * Runs one line (or script) in an existing shell, as an interactive shell does for each line it reads.
 * `exit` is reported in `exit`; otherwise the shell goes on and `$?` is in state.lastStatus.
 */
export function runShellLine(line: string, state: ShellState, env: ShellEnv): { steps: ShellStep[]; exit?: number } {
  const steps: ShellStep[] = [];
  const res = runScript(line, state, env, '', steps);
  return res.exit === undefined ? { steps } : { steps, exit: res.exit };
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing: a script is a list of simple commands joined by ; && || and newlines. Words keep their variable
// references so $? and $VAR expand when the command runs, not when the line is read.

type WordPart = string | { ref: string };
type Word = WordPart[];
interface SimpleCommand {
  words: Word[];
  /** How this command is joined to the previous one. */
  op: ';' | '&&' | '||';
}

class ShellSyntaxError extends Error {}

function parseScript(src: string): SimpleCommand[] {
  const cmds: SimpleCommand[] = [];
  let words: Word[] = [];
  let word: Word | null = null;
  let lit = '';
  let op: SimpleCommand['op'] = ';';
  let i = 0;

  const flushLit = (): void => {
    if (lit !== '') {
      (word ??= []).push(lit);
      lit = '';
    }
  };
  const endWord = (): void => {
    flushLit();
    if (word !== null) words.push(word);
    word = null;
  };
  const endCommand = (next: SimpleCommand['op']): void => {
    endWord();
    if (words.length > 0) cmds.push({ words, op });
    else if (next !== ';') throw new ShellSyntaxError(`syntax error: unexpected "${next}"`);
    words = [];
    op = next;
  };
  const readVar = (): void => {
    // At src[i] === '$'.
    const rest = src.slice(i + 1);
    let m: RegExpMatchArray | null;
    if ((m = rest.match(/^\{([A-Za-z_][A-Za-z0-9_]*|\?)\}/))) {
      flushLit();
      (word ??= []).push({ ref: m[1]! });
      i += 1 + m[0].length;
    } else if ((m = rest.match(/^([A-Za-z_][A-Za-z0-9_]*|\?|\$|#)/))) {
      flushLit();
      (word ??= []).push({ ref: m[1]! });
      i += 1 + m[0].length;
    } else {
      lit += '$';
      word ??= [];
      i++;
    }
  };

  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t') {
      endWord();
      i++;
    } else if (c === '\n' || c === ';') {
      endCommand(';');
      i++;
    } else if (c === '&' && src[i + 1] === '&') {
      endCommand('&&');
      i += 2;
    } else if (c === '|' && src[i + 1] === '|') {
      endCommand('||');
      i += 2;
    } else if (c === '|' || c === '&' || c === '>' || c === '<' || c === '(' || c === ')' || c === '`') {
      throw new ShellSyntaxError(`${c === '|' ? 'pipes' : c === '&' ? 'background jobs' : c === '`' ? 'command substitution' : c === '(' || c === ')' ? 'subshells' : 'redirections'} are not supported by this simulated shell`);
    } else if (c === '#' && word === null && lit === '') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) throw new ShellSyntaxError('syntax error: unterminated quoted string');
      word ??= [];
      lit += src.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      word ??= [];
      i++;
      for (;;) {
        if (i >= src.length) throw new ShellSyntaxError('syntax error: unterminated quoted string');
        const d = src[i]!;
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < src.length && '"\\$`\n'.includes(src[i + 1]!)) {
          if (src[i + 1] !== '\n') lit += src[i + 1];
          i += 2;
        } else if (d === '$') {
          readVar();
        } else {
          lit += d;
          i++;
        }
      }
    } else if (c === '\\') {
      if (i + 1 < src.length) {
        if (src[i + 1] !== '\n') {
          word ??= [];
          lit += src[i + 1];
        }
        i += 2;
      } else i++;
    } else if (c === '$') {
      readVar();
    } else {
      word ??= [];
      lit += c;
      i++;
    }
  }
  endCommand(';');
  if (op !== ';') throw new ShellSyntaxError('syntax error: unexpected end of file');
  return cmds;
}

function expandWord(w: Word, state: ShellState): string {
  let s = '';
  for (const p of w) {
    if (typeof p === 'string') s += p;
    else if (p.ref === '?') s += String(state.lastStatus);
    else if (p.ref === '$') s += '1';
    else if (p.ref === '#') s += '0';
    else s += state.vars.get(p.ref) ?? '';
  }
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Execution.

interface RunResult {
  /** Set when `exit` ran: the shell stops with this status. */
  exit?: number;
}

function runScript(src: string, state: ShellState, env: ShellEnv, stdin: string, steps: ShellStep[]): RunResult {
  let cmds: SimpleCommand[];
  try {
    cmds = parseScript(src);
  } catch (err) {
    if (!(err instanceof ShellSyntaxError)) throw err;
    steps.push({ stream: 'stderr', data: `sh: ${err.message}\n` });
    state.lastStatus = 2;
    return {};
  }
  for (const cmd of cmds) {
    if (cmd.op === '&&' && state.lastStatus !== 0) continue;
    if (cmd.op === '||' && state.lastStatus === 0) continue;
    const argv = cmd.words.map((w) => expandWord(w, state));
    // NAME=value alone sets a shell variable.
    const assign = argv.length === 1 ? argv[0]!.match(/^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s) : null;
    if (assign) {
      state.vars.set(assign[1]!, assign[2]!);
      state.lastStatus = 0;
      continue;
    }
    const res = runArgv(argv, state, env, stdin, steps, true);
    if (res.exit !== undefined) return res;
  }
  return {};
}

function runArgv(argv: string[], state: ShellState, env: ShellEnv, stdin: string, steps: ShellStep[], inShell = false): RunResult {
  const out = (data: string): void => {
    if (data !== '') steps.push({ stream: 'stdout', data });
  };
  const err = (data: string): void => {
    steps.push({ stream: 'stderr', data });
  };
  const status = (code: number): RunResult => {
    state.lastStatus = code & 0xff;
    return {};
  };
  const name = argv[0]!;
  const args = argv.slice(1);
  const prog = name.includes('/') ? basename(name) : name;

  if (SHELLS.has(name) || SHELLS.has(prog)) {
    const shName = prog;
    const ci = args.indexOf('-c');
    // A child shell gets a copy of the environment; its cd and variables do not leak back.
    const child: ShellState = { cwd: state.cwd, vars: new Map(state.vars), lastStatus: state.lastStatus };
    let res: RunResult;
    if (ci >= 0) {
      const script = args[ci + 1];
      if (script === undefined) {
        err(`${shName}: -c requires an argument\n`);
        return status(2);
      }
      res = runScript(script, child, env, stdin, steps);
    } else {
      res = runScript(stdin, child, env, '', steps);
    }
    return status(res.exit ?? child.lastStatus);
  }

  switch (prog) {
    case 'exit': {
      if (!inShell) break;
      const n = args.length > 0 ? Number.parseInt(args[0]!, 10) : state.lastStatus;
      if (args.length > 0 && Number.isNaN(n)) {
        err(`sh: exit: Illegal number: ${args[0]}\n`);
        return { exit: 2 };
      }
      state.lastStatus = n & 0xff;
      return { exit: n & 0xff };
    }
    case 'cd': {
      if (!inShell) break;
      const target = resolvePath(state.cwd, args[0] ?? '/root');
      if (!isDir(env, target)) {
        err(`sh: cd: can't cd to ${args[0] ?? '/root'}: No such file or directory\n`);
        return status(2);
      }
      state.cwd = target;
      return status(0);
    }
    case 'export': {
      if (!inShell) break;
      for (const a of args) {
        const m = a.match(/^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s);
        if (m) state.vars.set(m[1]!, m[2]!);
      }
      return status(0);
    }
    case 'true':
    case ':':
      return status(0);
    case 'false':
      return status(1);
    case 'echo': {
      let newline = true;
      let escapes = false;
      let i = 0;
      while (i < args.length && /^-[neE]+$/.test(args[i]!)) {
        if (args[i]!.includes('n')) newline = false;
        if (args[i]!.includes('e')) escapes = true;
        i++;
      }
      let text = args.slice(i).join(' ');
      if (escapes) text = unescapeC(text);
      out(text + (newline ? '\n' : ''));
      return status(0);
    }
    case 'printf': {
      if (args.length === 0) {
        err('printf: usage: printf FORMAT [ARGUMENT...]\n');
        return status(2);
      }
      out(printf(args[0]!, args.slice(1)));
      return status(0);
    }
    case 'hostname':
      out(env.hostname + '\n');
      return status(0);
    case 'whoami':
      out('root\n');
      return status(0);
    case 'id':
      out('uid=0(root) gid=0(root) groups=0(root)\n');
      return status(0);
    case 'pwd':
      out(state.cwd + '\n');
      return status(0);
    case 'uname':
      out(args.includes('-a') ? `Linux ${env.hostname} 6.1.0-sim #1 SMP x86_64 GNU/Linux\n` : 'Linux\n');
      return status(0);
    case 'env':
      out([...state.vars].map(([k, v]) => `${k}=${v}\n`).join(''));
      return status(0);
    case 'printenv': {
      if (args.length === 0) {
        out([...state.vars].map(([k, v]) => `${k}=${v}\n`).join(''));
        return status(0);
      }
      let code = 0;
      for (const a of args) {
        const v = state.vars.get(a);
        if (v === undefined) code = 1;
        else out(v + '\n');
      }
      return status(code);
    }
    case 'date':
      out(busyboxDate((env.now ?? (() => new Date()))()) + '\n');
      return status(0);
    case 'sleep': {
      const secs = Number.parseFloat(args[0] ?? '');
      if (args.length === 0 || Number.isNaN(secs) || secs < 0) {
        err(`sleep: invalid number '${args[0] ?? ''}'\n`);
        return status(1);
      }
      steps.push({ sleepMs: Math.min(Math.round(secs * 1000), MAX_SLEEP_MS) });
      return status(0);
    }
    case 'cat': {
      const files = args.length === 0 ? ['-'] : args;
      let code = 0;
      for (const f of files) {
        if (f === '-') {
          out(stdin);
          continue;
        }
        const p = resolvePath(state.cwd, f);
        const content = readFile(env, p);
        if (content === undefined) {
          err(isDir(env, p) ? `cat: read error: Is a directory\n` : `cat: can't open '${f}': No such file or directory\n`);
          code = 1;
        } else out(content);
      }
      return status(code);
    }
    case 'ls': {
      const paths = args.filter((a) => !a.startsWith('-'));
      const targets = paths.length === 0 ? [state.cwd] : paths;
      let code = 0;
      for (const t of targets) {
        const p = resolvePath(state.cwd, t);
        const entries = listDir(env, p);
        if (entries !== undefined) {
          if (targets.length > 1) out(`${t}:\n`);
          if (entries.length > 0) out(env.tty ? entries.join('  ') + '\n' : entries.map((e) => e + '\n').join(''));
        } else if (readFile(env, p) !== undefined) {
          out(t + '\n');
        } else {
          err(`ls: ${t}: No such file or directory\n`);
          code = 1;
        }
      }
      return status(code);
    }
  }

  if (inShell) {
    err(`sh: ${name}: not found\n`);
    return status(127);
  }
  // Direct exec of a builtin-only name (exit, cd): no such binary in the image.
  return status(127);
}

/** True when argv[0] names an executable of the simulated image (a shell builtin like cd or exit is not one). */
export function isKnownCommand(name: string): boolean {
  if (SHELLS.has(name)) return true;
  const prog = name.includes('/') ? basename(name) : name;
  return KNOWN_BINARIES.has(prog);
}

// What exists as an executable in the simulated image (shell builtins like cd and exit do not).
const KNOWN_BINARIES = new Set([
  'sh', 'bash', 'ash', 'true', 'false', 'echo', 'printf', 'hostname', 'whoami', 'id', 'pwd', 'uname', 'env',
  'printenv', 'date', 'sleep', 'cat', 'ls',
]);

/** What containerd and runc report when the executable is missing; the kubelet wraps it further. */
function startErrorFor(name: string): string {
  return `OCI runtime exec failed: exec failed: unable to start container process: exec: "${name}": executable file not found in $PATH: unknown`;
}

// ---------------------------------------------------------------------------------------------------------------
// Environment and the simulated filesystem.

function environment(env: ShellEnv): Array<[string, string]> {
  const vars: Array<[string, string]> = [
    ['PATH', '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    ['HOSTNAME', env.hostname],
  ];
  if (env.tty) vars.push(['TERM', 'xterm']);
  for (const [k, v] of Object.entries(env.vars ?? {})) vars.push([k, v]);
  vars.push(
    ['KUBERNETES_PORT', 'tcp://10.96.0.1:443'],
    ['KUBERNETES_PORT_443_TCP', 'tcp://10.96.0.1:443'],
    ['KUBERNETES_PORT_443_TCP_ADDR', '10.96.0.1'],
    ['KUBERNETES_PORT_443_TCP_PORT', '443'],
    ['KUBERNETES_PORT_443_TCP_PROTO', 'tcp'],
    ['KUBERNETES_SERVICE_HOST', '10.96.0.1'],
    ['KUBERNETES_SERVICE_PORT', '443'],
    ['KUBERNETES_SERVICE_PORT_HTTPS', '443'],
    ['HOME', '/root'],
  );
  return vars;
}

function files(env: ShellEnv): Record<string, string> {
  return {
    '/etc/hostname': env.hostname + '\n',
    '/etc/hosts':
      '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' +
      `10.244.0.10\t${env.hostname}\n`,
    '/etc/resolv.conf':
      `search ${env.namespace}.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n`,
    '/etc/os-release':
      'NAME="Alpine Linux"\nID=alpine\nVERSION_ID=3.20.3\nPRETTY_NAME="Alpine Linux v3.20"\n',
    '/etc/passwd': 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n',
    '/var/run/secrets/kubernetes.io/serviceaccount/namespace': env.namespace,
  };
}

const ROOT_ENTRIES = ['bin', 'dev', 'etc', 'home', 'lib', 'media', 'mnt', 'opt', 'proc', 'root', 'run', 'sbin', 'srv', 'sys', 'tmp', 'usr', 'var'];

function readFile(env: ShellEnv, path: string): string | undefined {
  return files(env)[path];
}

function listDir(env: ShellEnv, path: string): string[] | undefined {
  if (path === '/') return ROOT_ENTRIES;
  const prefix = path + '/';
  const names = new Set<string>();
  for (const f of Object.keys(files(env))) {
    if (f.startsWith(prefix)) names.add(f.slice(prefix.length).split('/')[0]!);
  }
  if (names.size > 0) return [...names].sort();
  // The top-level directories exist but are empty (except those holding files above).
  if (ROOT_ENTRIES.includes(path.slice(1))) return [];
  return undefined;
}

function isDir(env: ShellEnv, path: string): boolean {
  return listDir(env, path) !== undefined;
}

function resolvePath(cwd: string, p: string): string {
  const parts = (p.startsWith('/') ? p : `${cwd}/${p}`).split('/');
  const out: string[] = [];
  for (const part of parts) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return '/' + out.join('/');
}

function basename(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? p : p.slice(i + 1);
}

// ---------------------------------------------------------------------------------------------------------------
// Small formatting helpers.

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** busybox `date`: "Sun Nov 22 10:00:00 UTC 2026" (day of month padded with a space). */
function busyboxDate(d: Date): string {
  const p2 = (n: number): string => String(n).padStart(2, '0');
  return `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ` +
    `${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())} UTC ${d.getUTCFullYear()}`;
}

function unescapeC(s: string): string {
  return s.replace(/\\([nt\\r0]|c)/g, (_m, c: string) => ({ n: '\n', t: '\t', '\\': '\\', r: '\r', '0': '\0', c: '' })[c] ?? c);
}

/** printf with %s %d %% and C escapes; the format is reused while arguments remain, as POSIX printf does. */
function printf(format: string, args: string[]): string {
  let out = '';
  let ai = 0;
  do {
    out += unescapeC(format).replace(/%([sd%])/g, (_m, c: string) => {
      if (c === '%') return '%';
      const a = args[ai++] ?? '';
      return c === 'd' ? String(Number.parseInt(a, 10) || 0) : a;
    });
  } while (ai < args.length && /%[sd]/.test(format));
  return out;
}
