// `fleetgate certs init|issue`: the files a gateway needs to serve TLS and accept client certificates, and
// kubeconfigs for its users. Everything is generated in memory first so a failure leaves no half-written set.

import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { createCA, issueClientCert, issueServingCert, type CertKeyPem } from '../pki/index.js';
import { buildKubeconfig } from '../pki/kubeconfig.js';
import { UsageError } from './flags.js';

export interface Output {
  out: (s: string) => void;
  err: (s: string) => void;
}

/** A failure that is not wrong usage: one line on stderr, exit code 1. */
export class CommandError extends Error {
  override name = 'CommandError';
}

export const CERT_FILES = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  servingCert: 'serving.crt',
  servingKey: 'serving.key',
  clientCACert: 'client-ca.crt',
  clientCAKey: 'client-ca.key',
} as const;

export const DEFAULT_HOSTS = ['localhost', '127.0.0.1'];
export const DEFAULT_CLIENT_CERT_DAYS = 365;
const KEY_MODE = 0o600;
const CERT_MODE = 0o644;

export interface InitOptions {
  dir: string;
  hosts: string[];
  force: boolean;
}

export async function certsInit(cmd: string, opts: InitOptions, io: Output): Promise<void> {
  const dir = resolve(opts.dir);
  const names = Object.values(CERT_FILES);
  if (!opts.force) {
    const existing = names.filter((n) => existsSync(join(dir, n)));
    if (existing.length > 0) throw new CommandError(`${cmd}: ${dir} already has ${existing.join(', ')}; pass --force to replace them`);
  }
  const ca = await createCA('fleetgate-ca');
  const serving = await issueServingCert(ca, opts.hosts);
  const clientCA = await createCA('fleetgate-client-ca');
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new CommandError(`${cmd}: cannot create ${dir}: ${ioReason(err)}`);
  }
  const writes: Array<[string, string, number]> = [
    [CERT_FILES.caCert, ca.certPem, CERT_MODE],
    [CERT_FILES.caKey, ca.keyPem, KEY_MODE],
    [CERT_FILES.servingCert, serving.certPem, CERT_MODE],
    [CERT_FILES.servingKey, serving.keyPem, KEY_MODE],
    [CERT_FILES.clientCACert, clientCA.certPem, CERT_MODE],
    [CERT_FILES.clientCAKey, clientCA.keyPem, KEY_MODE],
  ];
  for (const [name, data, mode] of writes) writeFile(cmd, join(dir, name), data, mode, opts.force);
  const rows = [
    [`${CERT_FILES.caCert}, ${CERT_FILES.caKey}`, `CA of the serving certificate; clients trust ${CERT_FILES.caCert}`],
    [`${CERT_FILES.servingCert}, ${CERT_FILES.servingKey}`, `serving certificate for ${opts.hosts.join(', ')} (server.tls.certFile, keyFile)`],
    [`${CERT_FILES.clientCACert}, ${CERT_FILES.clientCAKey}`, 'CA of client certificates (server.tls.clientCAFile)'],
  ];
  const width = Math.max(...rows.map(([f]) => f!.length)) + 3;
  io.out(`created in ${dir}:\n${rows.map(([f, d]) => `  ${f!.padEnd(width)}${d}\n`).join('')}`);
}

export interface IssueOptions {
  dir: string;
  user: string;
  groups: string[];
  server: string;
  /** "-" writes the kubeconfig to stdout. */
  out: string;
  days: number;
  force: boolean;
}

export async function certsIssue(cmd: string, opts: IssueOptions, io: Output): Promise<void> {
  const dir = resolve(opts.dir);
  const toStdout = opts.out === '-';
  const out = toStdout ? '-' : resolve(opts.out);
  if (!toStdout && !opts.force && existsSync(out)) throw new CommandError(`${cmd}: ${out} already exists; pass --force to replace it`);
  const caPem = readFrom(cmd, dir, CERT_FILES.caCert);
  const clientCA: CertKeyPem = { certPem: readFrom(cmd, dir, CERT_FILES.clientCACert), keyPem: readFrom(cmd, dir, CERT_FILES.clientCAKey) };
  let client: CertKeyPem;
  try {
    client = await issueClientCert(clientCA, opts.user, opts.groups, { days: opts.days });
  } catch (err) {
    throw new CommandError(`${cmd}: cannot sign with ${join(dir, CERT_FILES.clientCAKey)}: ${(err as Error).message}`);
  }
  const kubeconfig = buildKubeconfig({
    name: 'fleetgate',
    server: opts.server,
    caPem,
    user: opts.user,
    clientCertPem: client.certPem,
    clientKeyPem: client.keyPem,
  });
  const until = new Date(new X509Certificate(client.certPem).validTo).toISOString();
  const who = `user ${JSON.stringify(opts.user)}${opts.groups.length ? `, groups ${opts.groups.map((g) => JSON.stringify(g)).join(', ')}` : ''}`;
  if (toStdout) {
    io.out(kubeconfig);
    io.err(`issued a client certificate for ${who}, valid until ${until}\n`);
    return;
  }
  writeFile(cmd, out, kubeconfig, KEY_MODE, opts.force);
  io.out(`wrote ${out}: ${who}, valid until ${until}, server ${opts.server}\n`);
}

/** --hosts: comma-separated IP addresses and DNS names (a leading *. label for a wildcard). */
export function parseHosts(cmd: string, value: string): string[] {
  const hosts: string[] = [];
  for (const raw of value.split(',')) {
    const h = raw.trim();
    if (h === '') throw new UsageError(`${cmd}: --hosts ${JSON.stringify(value)} has an empty entry; give IP addresses and DNS names separated by commas`);
    const bare = h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
    if (isIP(bare) === 0 && !isDNSName(h)) throw new UsageError(`${cmd}: --hosts entry ${JSON.stringify(h)} is not an IP address or DNS name`);
    if (!hosts.includes(h)) hosts.push(h);
  }
  return hosts;
}

/** --server: the https URL clients reach the gateway at. */
export function parseServerURL(cmd: string, value: string): string {
  let u: URL | undefined;
  try {
    u = new URL(value);
  } catch {
    u = undefined;
  }
  if (!u || u.protocol !== 'https:' || u.hostname === '' || u.search || u.hash || u.username) {
    throw new UsageError(`${cmd}: --server ${JSON.stringify(value)} is not an https:// URL such as https://localhost:6443`);
  }
  return value;
}

function isDNSName(s: string): boolean {
  const labels = s.split('.');
  return s.length <= 253 && labels.every((l, i) => (i === 0 && l === '*' && labels.length > 1) || /^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$/.test(l));
}

function readFrom(cmd: string, dir: string, name: string): string {
  const p = join(dir, name);
  try {
    return readFileSync(p, 'utf8');
  } catch (err) {
    const hint = (err as NodeJS.ErrnoException).code === 'ENOENT' ? ` (make it with: fleetgate certs init --dir ${dir})` : '';
    throw new CommandError(`${cmd}: cannot read ${p}: ${ioReason(err)}${hint}`);
  }
}

/**
 * Without force the file must not exist (O_EXCL, so a file appearing meanwhile is not clobbered); with force the
 * new content replaces the old in one rename. Either way the mode is exactly mode, whatever the umask.
 */
function writeFile(cmd: string, path: string, data: string, mode: number, force: boolean): void {
  try {
    if (!force) {
      writeFileSync(path, data, { mode, flag: 'wx' });
      chmodSync(path, mode);
      return;
    }
    const tmp = `${path}.tmp-${process.pid}`;
    writeFileSync(tmp, data, { mode, flag: 'w' });
    chmodSync(tmp, mode);
    renameSync(tmp, path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CommandError(`${cmd}: cannot write ${path}: ${code === 'EEXIST' ? 'it already exists; pass --force to replace it' : ioReason(err)}`);
  }
}

function ioReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'ENOTDIR') return 'a parent is not a directory';
  return (err as Error).message;
}
