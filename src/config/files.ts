// Checks on the files a configuration names, run at load time so that a typo in a path or a mismatched key is
// reported with the other problems, by field, before anything listens (kube-apiserver also refuses to start).
// Messages name files, never their contents: some of them are private keys.

import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { certificateBundle } from '../pki/bundle.js';
import { problem, show, type Walk } from './fields.js';

/** The file's text, or undefined with a problem saying why it cannot be read. */
export function readText(w: Walk, path: string, file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    problem(w, path, `${show(file)} cannot be read: ${ioReason(err)}`);
    return undefined;
  }
}

/** A PEM file with one or more certificates (a bundle is fine for CA files); returns the first. */
export function checkCertificates(w: Walk, path: string, file: string): X509Certificate | undefined {
  const pem = readText(w, path, file);
  if (pem === undefined) return undefined;
  try {
    return certificateBundle(pem, show(file))[0];
  } catch (err) {
    problem(w, path, (err as Error).message);
    return undefined;
  }
}

/** A PEM CRL file; whether its signature verifies against the client CA is checked when the gateway loads it. */
export function checkRevocationList(w: Walk, path: string, file: string): void {
  const pem = readText(w, path, file);
  if (pem === undefined) return;
  if (pem.trim() !== '' && !pem.includes('-----BEGIN X509 CRL-----')) {
    problem(w, path, `${show(file)} holds no PEM certificate revocation list (-----BEGIN X509 CRL-----); make one with fleetgate certs revoke`);
  }
}

/** The serving key must parse and belong to the serving certificate, as Go's tls.LoadX509KeyPair insists. */
export function checkServingKeyPair(w: Walk, certPath: string, certFile: string, keyPath: string, keyFile: string): void {
  const cert = checkCertificates(w, certPath, certFile);
  const pem = readText(w, keyPath, keyFile);
  if (pem === undefined) return;
  let key;
  try {
    key = createPrivateKey(pem);
  } catch {
    problem(w, keyPath, `${show(keyFile)} holds no PEM private key that can be read (unencrypted PKCS#8, PKCS#1 or SEC1)`);
    return;
  }
  if (cert && !cert.checkPrivateKey(key)) {
    problem(w, keyPath, `${show(keyFile)} is not the private key of the certificate in ${show(certFile)} (${certPath})`);
  }
}

/** A JSON Web Key Set: {"keys": [...]} with at least one key. */
export function checkJWKS(w: Walk, path: string, file: string): void {
  const json = readText(w, path, file);
  if (json === undefined) return;
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (err) {
    problem(w, path, `${show(file)} is not JSON: ${(err as Error).message}`);
    return;
  }
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) {
    problem(w, path, `${show(file)} is not a JSON Web Key Set ({"keys": [...]} with at least one key)`);
  }
}

/**
 * The kubeconfig must parse and name the context to use (or have a current-context) whose cluster it defines.
 * Only what selecting the context needs is checked here; the upstream client loads the file for real.
 */
export function checkKubeconfig(w: Walk, path: string, file: string, contextPath: string, context: string): void {
  const text = readText(w, path, file);
  if (text === undefined) return;
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    problem(w, path, `${show(file)} is not YAML: ${firstLine((err as Error).message)}`);
    return;
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    problem(w, path, `${show(file)} is not a kubeconfig (a YAML mapping with clusters, users and contexts)`);
    return;
  }
  const kc = doc as Record<string, unknown>;
  const contexts = namedEntries(kc['contexts']);
  const names = contexts.map((c) => c.name);
  const listed = names.length ? names.join(', ') : 'none';
  const chosen = context || (typeof kc['current-context'] === 'string' ? kc['current-context'] : '');
  if (!chosen) {
    problem(w, contextPath, `"" and ${show(file)} has no current-context; name one of its contexts: ${listed}`);
    return;
  }
  const entry = contexts.find((c) => c.name === chosen);
  if (!entry) {
    const what = context ? show(context) : `"" (current-context ${show(chosen)})`;
    problem(w, contextPath, `${what} is not a context in ${show(file)} (contexts: ${listed})`);
    return;
  }
  const cluster = (entry.body['context'] as Record<string, unknown> | undefined)?.['cluster'];
  const clusters = namedEntries(kc['clusters']);
  const target = clusters.find((c) => c.name === cluster);
  const server = (target?.body['cluster'] as Record<string, unknown> | undefined)?.['server'];
  if (typeof server !== 'string' || server === '') {
    problem(w, path, `context ${show(chosen)} in ${show(file)} names cluster ${show(cluster)}, which has no server there`);
  }
}

function namedEntries(v: unknown): Array<{ name: string; body: Record<string, unknown> }> {
  if (!Array.isArray(v)) return [];
  return v.flatMap((e) =>
    typeof e === 'object' && e !== null && typeof (e as { name?: unknown }).name === 'string'
      ? [{ name: (e as { name: string }).name, body: e as Record<string, unknown> }]
      : [],
  );
}

function ioReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    default:
      return (err as Error).message;
  }
}

function firstLine(s: string): string {
  const i = s.indexOf('\n');
  return i < 0 ? s : s.slice(0, i);
}
