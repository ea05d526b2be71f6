import { describe, expect, it } from 'vitest';
import {
  isInteractiveShell,
  newShellState,
  prompt,
  readsStdin,
  runCommand,
  runCommandSteps,
  runShellLine,
  type ShellEnv,
} from '../../test/sim/shell.js';

const env: ShellEnv = {
  podName: 'web-0',
  namespace: 'shop',
  container: 'app',
  hostname: 'web-0',
  vars: { MODE: 'prod' },
  now: () => new Date('2026-11-02T09:05:07Z'),
};

describe('runCommand: direct exec', () => {
  it('runs builtins that exist as binaries', () => {
    expect(runCommand(['echo', 'hello', 'world'], env)).toEqual({ stdout: 'hello world\n', stderr: '', exitCode: 0 });
    expect(runCommand(['echo', '-n', 'x'], env).stdout).toBe('x');
    expect(runCommand(['hostname'], env).stdout).toBe('web-0\n');
    expect(runCommand(['whoami'], env).stdout).toBe('root\n');
    expect(runCommand(['pwd'], env).stdout).toBe('/\n');
    expect(runCommand(['cat', '/etc/hostname'], env).stdout).toBe('web-0\n');
    expect(runCommand(['date'], env).stdout).toBe('Mon Nov  2 09:05:07 UTC 2026\n');
    expect(runCommand(['true'], env).exitCode).toBe(0);
    expect(runCommand(['false'], env).exitCode).toBe(1);
  });

  it('lists the root directory one entry per line', () => {
    const out = runCommand(['ls', '/'], env).stdout.split('\n');
    expect(out).toContain('etc');
    expect(out).toContain('tmp');
    expect(out[out.length - 1]).toBe('');
  });

  it('prints the environment with the container vars and the kubernetes service', () => {
    const out = runCommand(['env'], env).stdout;
    expect(out).toMatch(/^PATH=\/usr\/local\/sbin:/);
    expect(out).toContain('HOSTNAME=web-0\n');
    expect(out).toContain('MODE=prod\n');
    expect(out).toContain('KUBERNETES_SERVICE_HOST=10.96.0.1\n');
    expect(out).toContain('HOME=/root\n');
  });

  it('reports a missing executable as a start error, not an exit code of a shell', () => {
    const r = runCommand(['nosuchcmd', 'x'], env);
    expect(r.startError).toContain('exec: "nosuchcmd": executable file not found in $PATH');
    expect(runCommand(['exit', '3'], env).startError).toBeDefined();
  });

  it('cat without files copies stdin; reading a missing file fails like busybox', () => {
    expect(runCommand(['cat'], env, 'a\nb\n').stdout).toBe('a\nb\n');
    expect(runCommand(['cat', '/nope'], env)).toEqual({ stdout: '', stderr: "cat: can't open '/nope': No such file or directory\n", exitCode: 1 });
  });

  it('namespace-aware resolv.conf and service account namespace', () => {
    expect(runCommand(['cat', '/etc/resolv.conf'], env).stdout).toContain('search shop.svc.cluster.local svc.cluster.local cluster.local\n');
    expect(runCommand(['cat', '/var/run/secrets/kubernetes.io/serviceaccount/namespace'], env).stdout).toBe('shop');
  });
});

describe('sh -c', () => {
  it('runs sequences with ; && || and stops at exit', () => {
    expect(runCommand(['sh', '-c', 'echo hi; exit 3'], env)).toEqual({ stdout: 'hi\n', stderr: '', exitCode: 3 });
    expect(runCommand(['sh', '-c', 'false && echo no; echo yes'], env).stdout).toBe('yes\n');
    expect(runCommand(['sh', '-c', 'false || echo rescued'], env).stdout).toBe('rescued\n');
    expect(runCommand(['sh', '-c', 'true && echo a && false && echo b'], env)).toEqual({ stdout: 'a\n', stderr: '', exitCode: 1 });
    expect(runCommand(['sh', '-c', 'exit 300'], env).exitCode).toBe(44);
    expect(runCommand(['bash', '-c', 'false; exit'], env).exitCode).toBe(1);
  });

  it('quotes, variables and $?', () => {
    expect(runCommand(['sh', '-c', `echo 'a  b' "c $HOSTNAME" \${MODE}`], env).stdout).toBe('a  b c web-0 prod\n');
    expect(runCommand(['sh', '-c', 'false; echo $?; echo $?'], env).stdout).toBe('1\n0\n');
    expect(runCommand(['sh', '-c', 'X=1; echo "x=$X"'], env).stdout).toBe('x=1\n');
    expect(runCommand(['sh', '-c', 'echo a # comment'], env).stdout).toBe('a\n');
  });

  it('unknown commands and syntax errors behave like busybox sh', () => {
    expect(runCommand(['sh', '-c', 'frobnicate'], env)).toEqual({ stdout: '', stderr: 'sh: frobnicate: not found\n', exitCode: 127 });
    expect(runCommand(['sh', '-c', 'echo "open'], env)).toEqual({ stdout: '', stderr: 'sh: syntax error: unterminated quoted string\n', exitCode: 2 });
    expect(runCommand(['sh', '-c', 'ls /nope'], env).stderr).toBe('ls: /nope: No such file or directory\n');
  });

  it('cd changes pwd inside the script only', () => {
    expect(runCommand(['sh', '-c', 'cd /etc; pwd; cd nope'], env)).toEqual({
      stdout: '/etc\n',
      stderr: "sh: cd: can't cd to nope: No such file or directory\n",
      exitCode: 2,
    });
  });

  it('sleep is a step, not a blocking wait, and is capped', () => {
    const t0 = Date.now();
    const r = runCommandSteps(['sh', '-c', 'echo a; sleep 2; echo b; sleep 999'], env);
    expect(Date.now() - t0).toBeLessThan(500);
    expect(r.steps).toEqual([
      { stream: 'stdout', data: 'a\n' },
      { sleepMs: 2000 },
      { stream: 'stdout', data: 'b\n' },
      { sleepMs: 10_000 },
    ]);
    expect(r.exitCode).toBe(0);
  });
});

describe('interactive shells', () => {
  it('sh with no arguments runs stdin line by line', () => {
    expect(runCommand(['sh'], env, 'echo one\nhostname\nexit 4\necho never\n')).toEqual({ stdout: 'one\nweb-0\n', stderr: '', exitCode: 4 });
    expect(runCommand(['sh'], env, '')).toEqual({ stdout: '', stderr: '', exitCode: 0 });
  });

  it('knows which commands read stdin', () => {
    expect(readsStdin(['cat'])).toBe(true);
    expect(readsStdin(['cat', '/etc/hostname'])).toBe(false);
    expect(readsStdin(['sh'])).toBe(true);
    expect(readsStdin(['sh', '-c', 'echo'])).toBe(false);
    expect(readsStdin(['echo', 'x'])).toBe(false);
    expect(isInteractiveShell(['/bin/bash'])).toBe(true);
    expect(isInteractiveShell(['bash', '-c', 'x'])).toBe(false);
  });

  it('keeps state across lines of one session', () => {
    const state = newShellState(env);
    expect(prompt(state)).toBe('/ # ');
    expect(runShellLine('cd /etc', state, env)).toEqual({ steps: [] });
    expect(prompt(state)).toBe('/etc # ');
    expect(runShellLine('false', state, env).steps).toEqual([]);
    expect(runShellLine('echo $?', state, env).steps).toEqual([{ stream: 'stdout', data: '1\n' }]);
    expect(runShellLine('exit 7', state, env).exit).toBe(7);
  });
});
