// The `fleetgate` command line: finds the command, checks its flags and runs it. Exit codes: 0 done, 1 the
// command failed (including an invalid configuration), 2 wrong usage (one line naming the flag and what is allowed).

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import { REVOCATION_REASONS, type RevocationReason } from '../pki/crl.js';
import { CommandError, DEFAULT_CLIENT_CERT_DAYS, DEFAULT_CRL_DAYS, DEFAULT_HOSTS, certsInit, certsIssue, certsRevoke, certsRevoked, parseHosts, parseServerURL, type Output } from './certs.js';
import { UsageError, all, flagHelp, intFlag, optional, parseFlags, required, type FlagSpecs, type Flags } from './flags.js';

/** What `fleetgate demo` passes to demo() in src/cli/demo.ts; unset fields are the demo's own defaults. */
export interface DemoOptions {
  port?: number;
  dir?: string;
}

export type ServeFn = (config: Config) => Promise<unknown>;
export type DemoFn = (opts: DemoOptions) => Promise<unknown>;

interface Command {
  name: string;
  summary: string;
  usage: string;
  description: string;
  flags: FlagSpecs;
  run: (cmd: string, flags: Flags, io: Output) => Promise<number>;
}

const PORT_WHAT = 'a port number (1-65535, or 0 for any free port)';

const COMMANDS: Command[] = [
  {
    name: 'serve',
    summary: 'run the gateway from a configuration file',
    usage: 'serve --config FILE',
    description: 'Loads and validates FILE (see config/fleetgate.example.yaml), then serves until SIGINT or SIGTERM.',
    flags: { config: { type: 'string', value: 'FILE', help: 'the gateway configuration (YAML); required' } },
    run: async (cmd, f) => {
      const file = required(cmd, f, 'config', 'the path of the YAML configuration file');
      const config = loadConfig(file);
      const { serve } = await lazy<{ serve: ServeFn }>(cmd, 'serve.js', 'serve');
      await serve(config);
      return 0;
    },
  },
  {
    name: 'certs init',
    summary: 'create the CAs and the serving certificate a gateway needs',
    usage: 'certs init --dir DIR [--hosts H1,H2] [--force]',
    description: [
      'Writes into DIR (created if missing):',
      '  ca.crt, ca.key                a CA; clients trust ca.crt',
      '  serving.crt, serving.key      a serving certificate for --hosts signed by that CA',
      '  client-ca.crt, client-ca.key  the CA whose client certificates the gateway accepts (server.tls.clientCAFile)',
      'Keys are written with mode 0600. Existing files are left alone unless --force is given.',
    ].join('\n'),
    flags: {
      dir: { type: 'string', value: 'DIR', help: 'where to write the files; required' },
      hosts: { type: 'string', value: 'H1,H2', help: `host names and IP addresses of the serving certificate (default ${DEFAULT_HOSTS.join(',')})` },
      force: { type: 'boolean', help: 'replace files that already exist' },
    },
    run: async (cmd, f, io) => {
      const dir = required(cmd, f, 'dir', 'the directory to write the certificates to');
      const hostsFlag = optional(f, 'hosts');
      const hosts = hostsFlag === undefined ? DEFAULT_HOSTS : parseHosts(cmd, hostsFlag);
      await certsInit(cmd, { dir, hosts, force: f.bools.has('force') }, io);
      return 0;
    },
  },
  {
    name: 'certs issue',
    summary: 'issue a kubeconfig with a client certificate for a user',
    usage: 'certs issue --dir DIR --user NAME [--group G]... --server URL --out FILE [--days N] [--force]',
    description: [
      'Signs a client certificate (CN=NAME, one O per --group) with DIR/client-ca.key and writes a kubeconfig that',
      'embeds it and trusts DIR/ca.crt. The file holds a private key: it is written with mode 0600.',
    ].join('\n'),
    flags: {
      dir: { type: 'string', value: 'DIR', help: 'a directory made by `fleetgate certs init`; required' },
      user: { type: 'string', value: 'NAME', help: 'the user name (certificate CN); required' },
      group: { type: 'string', multiple: true, value: 'G', help: 'a group (certificate O); repeat for more' },
      server: { type: 'string', value: 'URL', help: 'the gateway URL clients use, e.g. https://localhost:6443; required' },
      out: { type: 'string', value: 'FILE', help: 'where to write the kubeconfig ("-" for stdout); required' },
      days: { type: 'string', value: 'N', help: `how long the certificate is valid (default ${DEFAULT_CLIENT_CERT_DAYS})` },
      force: { type: 'boolean', help: 'replace --out if it exists' },
    },
    run: async (cmd, f, io) => {
      const dir = required(cmd, f, 'dir', 'the directory made by fleetgate certs init');
      const user = required(cmd, f, 'user', 'the user name to put in the certificate');
      const groups = all(f, 'group');
      const empty = groups.findIndex((g) => g === '');
      if (empty >= 0) throw new UsageError(`${cmd}: --group "" is not a group name; give a non-empty name`);
      const server = parseServerURL(cmd, required(cmd, f, 'server', 'the https:// URL of the gateway'));
      const out = required(cmd, f, 'out', 'the kubeconfig file to write, or - for stdout');
      const days = intFlag(cmd, f, 'days', 1, 36_500, 'a whole number of days (1-36500)', DEFAULT_CLIENT_CERT_DAYS);
      await certsIssue(cmd, { dir, user, groups: [...new Set(groups)], server, out, days, force: f.bools.has('force') }, io);
      return 0;
    },
  },
  {
    name: 'certs revoke',
    summary: 'revoke client certificates: the gateway answers them with 401, without a restart',
    usage: 'certs revoke --dir DIR ((--cert FILE | --kubeconfig FILE | --serial HEX)... [--reason R] | --renew) [--days N]',
    description: [
      'Adds the certificates to DIR/client-ca.crl, a certificate revocation list signed by DIR/client-ca.key, and',
      'writes it anew (a new list number each time). A gateway whose server.tls.clientCRLFile is that file (or a',
      'copy of it, e.g. in a Kubernetes Secret) reloads it within seconds and answers the certificates with 401,',
      'also on connections opened before. Certificates already listed stay listed; revocation cannot be undone.',
      '--renew signs the same list again with a new validity (before its nextUpdate passes).',
      `Reasons: ${Object.keys(REVOCATION_REASONS).join(', ')}.`,
    ].join('\n'),
    flags: {
      dir: { type: 'string', value: 'DIR', help: 'a directory made by `fleetgate certs init`; required' },
      cert: { type: 'string', multiple: true, value: 'FILE', help: 'a PEM client certificate to revoke; repeat for more' },
      kubeconfig: { type: 'string', multiple: true, value: 'FILE', help: "a kubeconfig (as `certs issue` writes it) whose current user's certificate to revoke" },
      serial: { type: 'string', multiple: true, value: 'HEX', help: 'a serial number to revoke (hex, as `certs issue` prints it)' },
      reason: { type: 'string', value: 'R', help: 'the RFC 5280 reason recorded in the list (default: none)' },
      days: { type: 'string', value: 'N', help: `how long the new list is valid (its nextUpdate; default ${DEFAULT_CRL_DAYS})` },
      renew: { type: 'boolean', help: 'revoke nothing new: sign the list again with a new nextUpdate' },
    },
    run: async (cmd, f, io) => {
      const dir = required(cmd, f, 'dir', 'the directory made by fleetgate certs init');
      const certs = all(f, 'cert');
      const kubeconfigs = all(f, 'kubeconfig');
      const serials = all(f, 'serial');
      const renew = f.bools.has('renew');
      if (renew && certs.length + kubeconfigs.length + serials.length > 0) {
        throw new UsageError(`${cmd}: --renew re-signs the list as it is; give it without --cert, --kubeconfig or --serial`);
      }
      if (!renew && certs.length + kubeconfigs.length + serials.length === 0) {
        throw new UsageError(`${cmd}: nothing to revoke; give --cert FILE, --kubeconfig FILE or --serial HEX (or --renew to re-sign the list)`);
      }
      const reasonFlag = optional(f, 'reason');
      if (reasonFlag !== undefined && !(reasonFlag in REVOCATION_REASONS)) {
        throw new UsageError(`${cmd}: --reason ${JSON.stringify(reasonFlag)} is not one of ${Object.keys(REVOCATION_REASONS).join(', ')}`);
      }
      const days = intFlag(cmd, f, 'days', 1, 36_500, 'a whole number of days (1-36500)', DEFAULT_CRL_DAYS);
      await certsRevoke(cmd, { dir, certs, kubeconfigs, serials, ...(reasonFlag ? { reason: reasonFlag as RevocationReason } : {}), days }, io);
      return 0;
    },
  },
  {
    name: 'certs revoked',
    summary: 'list the revoked client certificates',
    usage: 'certs revoked --dir DIR',
    description: 'Prints the serial number, revocation time and reason of every certificate DIR/client-ca.crl lists.',
    flags: { dir: { type: 'string', value: 'DIR', help: 'a directory made by `fleetgate certs init`; required' } },
    run: async (cmd, f, io) => {
      await certsRevoked(cmd, { dir: required(cmd, f, 'dir', 'the directory made by fleetgate certs init') }, io);
      return 0;
    },
  },
  {
    name: 'demo',
    summary: 'run a self-contained demo fleet behind the gateway',
    usage: 'demo [--port N] [--dir DIR]',
    description: 'Starts simulated member clusters and a gateway in front of them, and prints how to reach it with kubectl.',
    flags: {
      port: { type: 'string', value: 'N', help: 'the gateway port' },
      dir: { type: 'string', value: 'DIR', help: 'where to keep certificates and kubeconfigs' },
    },
    run: async (cmd, f) => {
      const port = intFlag(cmd, f, 'port', 0, 65_535, PORT_WHAT);
      const dir = optional(f, 'dir');
      if (dir === '') throw new UsageError(`${cmd}: --dir "" is not a directory; give a path`);
      const { demo } = await lazy<{ demo: DemoFn }>(cmd, 'demo.js', 'demo');
      await demo({ ...(port !== undefined ? { port } : {}), ...(dir !== undefined ? { dir } : {}) });
      return 0;
    },
  },
  {
    name: 'version',
    summary: 'print the version',
    usage: 'version',
    description: 'Prints fleetgate\'s version.',
    flags: {},
    run: async (_cmd, _f, io) => {
      io.out(`fleetgate ${version()}\n`);
      return 0;
    },
  },
];

const GROUPS = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]!))];

const stdio: Output = { out: (s) => void process.stdout.write(s), err: (s) => void process.stderr.write(s) };

/** Runs the command line args (without node and the script); resolves to the exit code. */
export async function main(args: string[], io: Output = stdio): Promise<number> {
  let cmd = 'fleetgate';
  try {
    const first = args[0];
    if (first === undefined) throw new UsageError(`fleetgate: missing command; one of ${GROUPS.join(', ')} (fleetgate --help lists them)`);
    if (first === '--help' || first === '-h' || first === 'help') return help(args.slice(1), io);
    if (first === '--version') {
      io.out(`fleetgate ${version()}\n`);
      return 0;
    }
    if (first.startsWith('-')) throw new UsageError(`fleetgate: unknown flag ${first}; a command comes first: ${GROUPS.join(', ')}`);
    const command = find(args);
    if (!command) {
      if (args[1] === '--help' || args[1] === '-h') return help([first], io);
      throw new UsageError(unknownCommand(args));
    }
    cmd = `fleetgate ${command.name}`;
    const flags = parseFlags(cmd, args.slice(command.name.split(' ').length), command.flags);
    if (flags.bools.has('help')) {
      io.out(commandHelp(command));
      return 0;
    }
    return await command.run(cmd, flags, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\n`);
      return 2;
    }
    if (err instanceof ConfigError) {
      const n = err.errors.length;
      io.err(`${cmd}: ${err.source} is not a valid configuration (${n} problem${n === 1 ? '' : 's'}):\n${err.errors.map((e) => `  ${e}\n`).join('')}`);
      return 1;
    }
    if (err instanceof CommandError) {
      io.err(`${err.message}\n`);
      return 1;
    }
    io.err(`${cmd}: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  }
}

function find(args: string[]): Command | undefined {
  return COMMANDS.find((c) => c.name === args[0]) ?? COMMANDS.find((c) => c.name === `${args[0]} ${args[1]}`);
}

function unknownCommand(args: string[]): string {
  const group = args[0]!;
  const subs = COMMANDS.filter((c) => c.name.startsWith(`${group} `)).map((c) => c.name.slice(group.length + 1));
  if (subs.length === 0) return `fleetgate: unknown command ${JSON.stringify(group)}; one of ${GROUPS.join(', ')}`;
  const sub = args[1];
  if (sub === undefined || sub.startsWith('-')) {
    return `fleetgate ${group}: missing subcommand; one of ${subs.join(', ')}`;
  }
  return `fleetgate ${group}: unknown subcommand ${JSON.stringify(sub)}; one of ${subs.join(', ')}`;
}

function help(topic: string[], io: Output): number {
  const command = topic.length ? find(topic) : undefined;
  if (command) {
    io.out(commandHelp(command));
    return 0;
  }
  const group = topic[0];
  const members = group ? COMMANDS.filter((c) => c.name.startsWith(`${group} `)) : [];
  if (group !== undefined && members.length === 0) throw new UsageError(unknownCommand(topic));
  const list = group ? members : COMMANDS;
  const width = Math.max(...list.map((c) => c.name.length)) + 3;
  const lines = [
    group ? `Usage: fleetgate ${group} <subcommand> [flags]` : 'fleetgate: one Kubernetes API endpoint for a fleet of clusters.\n\nUsage: fleetgate <command> [flags]',
    '',
    group ? 'Subcommands:' : 'Commands:',
    ...list.map((c) => `  ${(group ? c.name.slice(group.length + 1) : c.name).padEnd(width)}${c.summary}`),
    '',
    `Run \`fleetgate ${group ? `${group} ` : ''}<${group ? 'subcommand' : 'command'}> --help\` for its flags.`,
    'Exit codes: 0 success, 1 failure (including an invalid configuration), 2 wrong usage.',
    '',
  ];
  io.out(lines.join('\n'));
  return 0;
}

function commandHelp(c: Command): string {
  return `Usage: fleetgate ${c.usage}\n\n${c.description}\n\nFlags:\n${flagHelp(c.flags)}\n`;
}

/**
 * Imports a module of this directory at run time (serve.js, demo.js): the CLI must work for the other commands
 * in a build that lacks one, and a missing one must fail by name rather than as a stack trace.
 */
async function lazy<T>(cmd: string, file: string, exported: string): Promise<T> {
  const url = new URL(`./${file}`, import.meta.url);
  // Under vitest this module runs from src/, where the sibling is still .ts (vite maps the .js import to it).
  const source = new URL(`./${file.replace(/\.js$/, '.ts')}`, import.meta.url);
  if (!existsSync(fileURLToPath(url)) && !existsSync(fileURLToPath(source))) {
    throw new CommandError(`${cmd}: not available in this build (${fileURLToPath(url)} is missing)`);
  }
  const mod = (await import(url.href)) as Record<string, unknown>;
  if (typeof mod[exported] !== 'function') throw new CommandError(`${cmd}: ${fileURLToPath(url)} does not export ${exported}()`);
  return mod as T;
}

let cachedVersion: string | undefined;

/** The version in fleetgate's package.json, found above this file both in src/ (tests) and dist/src/ (built). */
export function version(): string {
  if (cachedVersion) return cachedVersion;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const p = join(dir, 'package.json');
    if (existsSync(p)) {
      const pkg = JSON.parse(readFileSync(p, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'fleetgate' && pkg.version) return (cachedVersion = pkg.version);
    }
    if (dirname(dir) === dir) return (cachedVersion = 'unknown');
  }
}

