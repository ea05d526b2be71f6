// `fleetgate certs init|issue`: the files a gateway needs to serve TLS and accept client certificates, and
// kubeconfigs for its users. Everything is generated in memory first so a failure leaves no half-written set.

import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { readRevocationLists, normalizeSerial, signRevocationList, type RevocationReason, type RevokedEntry } from '../pki/crl.js';
import { certificateSerial, createCA, issueClientCert, issueServingCert, type CertKeyPem } from '../pki/index.js';
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
  /** Written by `certs revoke`; not made by init, so `init --force` never drops revocations. */
  clientCRL: 'client-ca.crl',
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
  const names = Object.values(CERT_FILES).filter((n) => n !== CERT_FILES.clientCRL);
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
  io.out(`wrote ${out}: ${who}, serial ${certificateSerial(client.certPem)}, valid until ${until}, server ${opts.server}\n`);
}

export interface RevokeOptions {
  dir: string;
  /** PEM certificate files. */
  certs: string[];
  /** Kubeconfigs whose current user has a client certificate (as `certs issue` writes them). */
  kubeconfigs: string[];
  /** Hex serial numbers, with or without colons. */
  serials: string[];
  reason?: RevocationReason;
  /** How long the new list is valid (its nextUpdate). */
  days: number;
}

export const DEFAULT_CRL_DAYS = 365;

/**
 * Adds certificates to DIR/client-ca.crl, a CRL signed by the client CA, and writes the new list in one rename so
 * a gateway reloading it never reads half a file. Certificates not issued by this client CA are refused: listing
 * them would have no effect and hide the mistake.
 */
export async function certsRevoke(cmd: string, opts: RevokeOptions, io: Output): Promise<void> {
  const dir = resolve(opts.dir);
  const clientCA: CertKeyPem = { certPem: readFrom(cmd, dir, CERT_FILES.clientCACert), keyPem: readFrom(cmd, dir, CERT_FILES.clientCAKey) };
  const crlPath = join(dir, CERT_FILES.clientCRL);
  const { entries, number } = await currentList(cmd, crlPath, clientCA.certPem);
  const caCert = new X509Certificate(clientCA.certPem);

  const wanted: Array<{ serial: string; what: string }> = [];
  const addCert = (pem: string, source: string) => {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(pem);
    } catch (err) {
      throw new CommandError(`${cmd}: ${source} holds no readable certificate: ${(err as Error).message}`);
    }
    if (!cert.checkIssued(caCert) || !cert.verify(caCert.publicKey)) {
      throw new CommandError(`${cmd}: ${source} was not issued by ${join(dir, CERT_FILES.clientCACert)}; the gateway does not accept it anyway`);
    }
    wanted.push({ serial: normalizeSerial(cert.serialNumber), what: `${cert.subject.replace(/\n/g, ', ')}, from ${source}` });
  };
  for (const f of opts.certs) addCert(readPath(cmd, f), f);
  for (const f of opts.kubeconfigs) addCert(clientCertOfKubeconfig(cmd, f), f);
  for (const s of opts.serials) {
    let serial: string;
    try {
      serial = normalizeSerial(s);
    } catch (err) {
      throw new UsageError(`${cmd}: --serial: ${(err as Error).message}; give it as openssl or \`certs issue\` prints it, e.g. 3A5F...`);
    }
    wanted.push({ serial, what: 'by serial' });
  }

  const now = new Date();
  const known = new Map(entries.map((e) => [e.serial, e]));
  const lines: string[] = [];
  for (const w of wanted) {
    const had = known.get(w.serial);
    if (had) {
      lines.push(`already revoked ${w.serial.toUpperCase()} (${w.what}) on ${had.revokedAt.toISOString()}\n`);
      continue;
    }
    const e: RevokedEntry = { serial: w.serial, revokedAt: now, ...(opts.reason ? { reason: opts.reason } : {}) };
    known.set(w.serial, e);
    lines.push(`revoked ${w.serial.toUpperCase()} (${w.what})\n`);
  }
  let pem: string;
  try {
    pem = await signRevocationList(clientCA, [...known.values()], { number: number + 1n, days: opts.days, now });
  } catch (err) {
    throw new CommandError(`${cmd}: cannot sign with ${join(dir, CERT_FILES.clientCAKey)}: ${(err as Error).message}`);
  }
  writeFile(cmd, crlPath, pem, CERT_MODE, true);
  io.out(
    lines.join('') +
      `wrote ${crlPath}: ${known.size} revoked certificate${known.size === 1 ? '' : 's'}, list number ${number + 1n}, valid until ${new Date(now.getTime() + opts.days * 86_400_000).toISOString()}\n` +
      'gateways whose server.tls.clientCRLFile is this file refuse these certificates within seconds, without a restart\n',
  );
}

/** `certs revoked`: what DIR/client-ca.crl lists. */
export async function certsRevoked(cmd: string, opts: { dir: string }, io: Output): Promise<void> {
  const dir = resolve(opts.dir);
  const crlPath = join(dir, CERT_FILES.clientCRL);
  const caPem = readFrom(cmd, dir, CERT_FILES.clientCACert);
  if (!existsSync(crlPath)) {
    io.out(`${crlPath} does not exist: no certificate has been revoked\n`);
    return;
  }
  const { entries, number, nextUpdate } = await currentList(cmd, crlPath, caPem);
  const rows = [['SERIAL', 'REVOKED', 'REASON'], ...entries.map((e) => [e.serial.toUpperCase(), e.revokedAt.toISOString(), e.reason ?? ''])];
  const widths = [0, 1].map((i) => Math.max(...rows.map((r) => r[i]!.length)) + 3);
  io.out(rows.map((r) => `${r[0]!.padEnd(widths[0]!)}${r[1]!.padEnd(widths[1]!)}${r[2]}`.trimEnd() + '\n').join(''));
  io.out(`list number ${number}${nextUpdate ? `, valid until ${nextUpdate.toISOString()}` : ''}\n`);
}

async function currentList(cmd: string, crlPath: string, caPem: string): Promise<{ entries: RevokedEntry[]; number: bigint; nextUpdate?: Date }> {
  if (!existsSync(crlPath)) return { entries: [], number: 0n };
  try {
    const lists = await readRevocationLists(readFileSync(crlPath, 'utf8'), caPem);
    const entries = lists.flatMap((l) => l.entries);
    const number = lists.reduce((n, l) => (l.number !== undefined && l.number > n ? l.number : n), 0n);
    const nextUpdate = lists[0]?.nextUpdate;
    return { entries, number, ...(nextUpdate ? { nextUpdate } : {}) };
  } catch (err) {
    throw new CommandError(`${cmd}: ${crlPath} is not a revocation list of this client CA: ${(err as Error).message}; move it away to start a new one`);
  }
}

function clientCertOfKubeconfig(cmd: string, file: string): string {
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw new CommandError(`${cmd}: cannot read kubeconfig ${file}: ${(err as Error).message}`);
  }
  const user = kc.getCurrentUser();
  if (user?.certData) return Buffer.from(user.certData, 'base64').toString('utf8');
  if (user?.certFile) return readPath(cmd, resolve(dirname(resolve(file)), user.certFile));
  throw new CommandError(`${cmd}: kubeconfig ${file} has no client certificate for its current user${user ? ` (${user.name})` : ''}`);
}

function readPath(cmd: string, p: string): string {
  try {
    return readFileSync(p, 'utf8');
  } catch (err) {
    throw new CommandError(`${cmd}: cannot read ${p}: ${ioReason(err)}`);
  }
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
