// The serving certificate, its key and the client CA bundle are reloaded when their files change, as
// kube-apiserver's dynamic certificate controllers do: cert-manager and Secret updates rotate them under a running
// gateway. New connections get the new files; open ones keep their serving certificate, and their client
// certificates are checked against the new CA bundle by the authenticator (src/authn/x509.ts). A new set that does
// not load (a key that does not match, a half-written file) is refused and the running one stays.

import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { CounterVec, GaugeVec } from '../metrics/vec.js';
import type { ServerTLSConfig } from '../config/index.js';
import { certificateBundle } from '../pki/bundle.js';
import { SERVER_CIPHER_OPTIONS } from '../pki/ciphers.js';
import { fileSignature, watchForChanges, type FileWatcher } from '../config/watch.js';

export interface TLSFiles {
  /** What the listener is created with. */
  options: SecureContextOptions;
  /** The client CA bundle's certificates (none without a clientCAFile), parsed as the listener's context takes them. */
  clientCAs: X509Certificate[];
  /** Starts reloading into apply (the listener's context and the authenticator's bundle, together); close() stops. */
  watch(apply: (o: SecureContextOptions, clientCAs: X509Certificate[]) => void): FileWatcher;
}

const POLL_MS = 5_000;

export async function loadTLSFiles(tls: ServerTLSConfig, log: Logger, registry: Registry): Promise<TLSFiles> {
  const expiry = new GaugeVec({
    name: 'fleetgate_serving_certificate_expiration_seconds',
    help: 'Unix time at which the serving certificate in use expires.',
    registers: [registry],
  });
  const reloads = new CounterVec({
    name: 'fleetgate_tls_reloads_total',
    help: 'Reloads of the serving certificate, key and client CA after their files changed, by result (a failure keeps the running ones).',
    labelNames: ['result'],
    registers: [registry],
  });
  reloads.inc({ result: 'success' }, 0);
  reloads.inc({ result: 'failure' }, 0);

  const read = async (): Promise<{ options: SecureContextOptions; clientCAs: X509Certificate[] }> => {
    const [key, cert, ca] = await Promise.all([readFile(tls.keyFile), readFile(tls.certFile), tls.clientCAFile ? readFile(tls.clientCAFile) : undefined]);
    const leaf = new X509Certificate(cert);
    if (!leaf.checkPrivateKey(createPrivateKey(key))) throw new Error(`${tls.keyFile} is not the key of ${tls.certFile}`);
    // Every block, where OpenSSL stops quietly at the first it cannot read: the authenticator must trust exactly
    // what the listener does, so a bundle with a broken block is refused whole.
    const clientCAs = ca ? certificateBundle(ca, JSON.stringify(tls.clientCAFile)) : [];
    expiry.set(Date.parse(leaf.validTo) / 1000);
    // The listener gets the certificates as parsed here, so that it trusts exactly what the authenticator checks.
    const caPems = clientCAs.map((c) => c.toString());
    // Every certificate of the bundle is a trust anchor, as in Go's x509 Roots pool (kube-apiserver's
    // --client-ca-file): a bundle holding an intermediate CA without its root vouches for that intermediate's
    // clients there. OpenSSL would insist on a path to a self-signed root without the partial-chain flag (which the
    // listener sets on its context itself: tls.Server drops this option, see server.ts allowPartialTrustChain).
    const trust = ca ? { ca: caPems, allowPartialTrustChain: true } : {};
    return { options: { key, cert, ...trust, minVersion: tls.minVersion, ...SERVER_CIPHER_OPTIONS }, clientCAs };
  };
  const files = [tls.certFile, tls.keyFile, ...(tls.clientCAFile ? [tls.clientCAFile] : [])];
  const signature = async () => (await Promise.all(files.map(fileSignature))).join('|');
  // Taken before the read: a rotation while the gateway starts (before watch() is called) is reloaded.
  const initialSignature = await signature().catch(() => undefined);
  const first = await read();

  return {
    options: first.options,
    clientCAs: first.clientCAs,
    watch(apply) {
      return watchForChanges({
        dir: files.map((f) => dirname(f)),
        intervalMs: POLL_MS,
        signature,
        initialSignature,
        onChange: async () => {
          const next = await read();
          apply(next.options, next.clientCAs);
          reloads.inc({ result: 'success' });
          log.info({ certFile: tls.certFile }, 'serving certificate and client CA reloaded');
        },
        onError: (err) => {
          reloads.inc({ result: 'failure' });
          log.error({ err: (err as Error).message ?? String(err) }, 'reloading the serving certificate or client CA failed; the running ones stay');
        },
      });
    },
  };
}
