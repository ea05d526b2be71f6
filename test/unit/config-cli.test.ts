// The command line in process: usage errors are one line naming the flag and what is allowed, exit code 2.

import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => void (out += s), err: (s) => void (err += s) });
  return { code, out, err };
}

/** A usage error: exit 2, nothing on stdout, exactly one line on stderr. */
async function usage(...args: string[]): Promise<string> {
  const r = await run(...args);
  expect(r.code).toBe(2);
  expect(r.out).toBe('');
  expect(r.err.endsWith('\n')).toBe(true);
  expect(r.err.trimEnd().split('\n')).toHaveLength(1);
  return r.err.trimEnd();
}

const ISSUE = ['certs', 'issue', '--dir', '/nonexistent', '--user', 'alice', '--server', 'https://localhost:6443', '--out', '/nonexistent/kc'];

describe('fleetgate usage errors', () => {
  it('names the missing or unknown command', async () => {
    expect(await usage()).toBe('fleetgate: missing command; one of serve, certs, demo, version (fleetgate --help lists them)');
    expect(await usage('frob')).toBe('fleetgate: unknown command "frob"; one of serve, certs, demo, version');
    expect(await usage('certs')).toBe('fleetgate certs: missing subcommand; one of init, issue, revoke, revoked');
    expect(await usage('certs', 'renew')).toBe('fleetgate certs: unknown subcommand "renew"; one of init, issue, revoke, revoked');
    expect(await usage('--config', 'x')).toBe('fleetgate: unknown flag --config; a command comes first: serve, certs, demo, version');
  });

  it('names unknown flags with the allowed ones', async () => {
    expect(await usage('certs', 'init', '--dir', 'd', '--host', 'x')).toBe('fleetgate certs init: unknown flag --host; allowed: --dir, --hosts, --force, --help');
    expect(await usage('serve', '-c', 'x')).toBe('fleetgate serve: unknown flag -c; allowed: --config, --help');
    expect(await usage('version', '--constructor')).toBe('fleetgate version: unknown flag --constructor; allowed: --help');
  });

  it('refuses missing values, values on switches, repeats and arguments', async () => {
    expect(await usage('certs', 'init', '--dir')).toBe('fleetgate certs init: --dir needs a value (DIR)');
    expect(await usage('certs', 'init', '--dir', '--force')).toBe('fleetgate certs init: --dir needs a value (DIR)');
    expect(await usage('certs', 'init', '--dir', 'd', '--force=yes')).toBe('fleetgate certs init: --force takes no value (got "yes")');
    expect(await usage('certs', 'init', '--dir', 'a', '--dir', 'b')).toBe('fleetgate certs init: --dir is given more than once; give it once');
    expect(await usage('certs', 'init', 'd')).toBe('fleetgate certs init: unexpected argument "d"; this command takes flags only (allowed: --dir, --hosts, --force, --help)');
  });

  it('names required flags', async () => {
    expect(await usage('serve')).toBe('fleetgate serve: --config is required (the path of the YAML configuration file)');
    expect(await usage('certs', 'init', '--dir=')).toBe('fleetgate certs init: --dir is required (the directory to write the certificates to)');
    expect(await usage('certs', 'issue', '--dir', 'd', '--server', 'https://x', '--out', 'f')).toBe(
      'fleetgate certs issue: --user is required (the user name to put in the certificate)',
    );
    expect(await usage('certs', 'issue', '--dir', 'd', '--user', 'u', '--out', 'f')).toBe('fleetgate certs issue: --server is required (the https:// URL of the gateway)');
    expect(await usage('certs', 'issue', '--dir', 'd', '--user', 'u', '--server', 'https://x')).toBe(
      'fleetgate certs issue: --out is required (the kubeconfig file to write, or - for stdout)',
    );
  });

  it('says what values are allowed', async () => {
    expect(await usage(...ISSUE, '--days', '0')).toBe('fleetgate certs issue: --days "0" is not a whole number of days (1-36500)');
    expect(await usage(...ISSUE, '--days', '1.5')).toBe('fleetgate certs issue: --days "1.5" is not a whole number of days (1-36500)');
    expect(await usage(...ISSUE, '--group', '')).toBe('fleetgate certs issue: --group "" is not a group name; give a non-empty name');
    expect(await usage(...ISSUE.slice(0, 7), 'http://localhost:6443', '--out', 'f')).toBe(
      'fleetgate certs issue: --server "http://localhost:6443" is not an https:// URL such as https://localhost:6443',
    );
    expect(await usage('certs', 'init', '--dir', 'd', '--hosts', 'localhost,,x')).toBe(
      'fleetgate certs init: --hosts "localhost,,x" has an empty entry; give IP addresses and DNS names separated by commas',
    );
    expect(await usage('certs', 'init', '--dir', 'd', '--hosts', 'a_b')).toBe('fleetgate certs init: --hosts entry "a_b" is not an IP address or DNS name');
    expect(await usage('demo', '--port', '65536')).toBe('fleetgate demo: --port "65536" is not a port number (1-65535, or 0 for any free port)');
  });
});

describe('fleetgate help and version', () => {
  it('prints help on stdout with exit 0', async () => {
    const top = await run('--help');
    expect(top.code).toBe(0);
    expect(top.out).toMatch(/^fleetgate: /);
    for (const c of ['serve', 'certs init', 'certs issue', 'demo', 'version']) expect(top.out).toContain(`\n  ${c} `);
    expect((await run('help')).out).toBe(top.out);

    const certs = await run('certs', '--help');
    expect(certs.code).toBe(0);
    expect(certs.out).toContain('Usage: fleetgate certs <subcommand> [flags]');
    expect(certs.out).toMatch(/\n {2}init +create the CAs/);

    const issue = await run('certs', 'issue', '--help');
    expect(issue.code).toBe(0);
    expect(issue.err).toBe('');
    expect(issue.out).toContain('Usage: fleetgate certs issue --dir DIR --user NAME [--group G]... --server URL --out FILE [--days N] [--force]');
    expect(issue.out).toMatch(/\n {2}--group G +a group \(certificate O\); repeat for more\n/);
    expect((await run('help', 'certs', 'issue')).out).toBe(issue.out);
    expect((await run('serve', '-h')).out).toContain('Usage: fleetgate serve --config FILE');
  });

  it('prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    expect(await run('version')).toEqual({ code: 0, out: `fleetgate ${pkg.version}\n`, err: '' });
    expect((await run('--version')).out).toBe(`fleetgate ${pkg.version}\n`);
  });
});

describe('fleetgate failures', () => {
  it('lists every configuration problem and exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-cli-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'server:\n  port: abc\n  tls: { certFile: c.crt, keyFile: c.key }\ncontrolPlane: {}\nauthentication: { anonymous: { enabled: true } }\n');
    const r = await run('serve', '--config', file);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toBe(
      [
        `fleetgate serve: ${file} is not a valid configuration (4 problems):`,
        `  config: server.tls.certFile: "${join(dir, 'c.crt')}" cannot be read: no such file`,
        `  config: server.tls.keyFile: "${join(dir, 'c.key')}" cannot be read: no such file`,
        '  config: server.port: "abc" is not a port number (1-65535, or 0 for any free port)',
        '  config: controlPlane.kubeconfig: missing; a path to the kubeconfig of the federation control plane is required',
        '',
      ].join('\n'),
    );
  });

  it('says which files are missing for certs issue and exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-cli-'));
    const r = await run('certs', 'issue', '--dir', dir, '--user', 'alice', '--server', 'https://localhost:6443', '--out', join(dir, 'kc'));
    expect(r.code).toBe(1);
    expect(r.err).toBe(`fleetgate certs issue: cannot read ${join(dir, 'ca.crt')}: no such file or directory (make it with: fleetgate certs init --dir ${dir})\n`);
    expect(existsSync(join(dir, 'kc'))).toBe(false);
  });
});
