// The client certificate revocation list (server.tls.clientCRLFile): certificates it lists get 401 like any
// unverifiable certificate, from the next request on, including requests on connections opened before the
// revocation (the verdict on the certificate itself is cached per connection; this check is not).
//
// The file is reloaded when it changes. A list that cannot be used at start stops the gateway; a bad or missing
// file later keeps the last good list in force, so a botched update never lets revoked certificates back in.
// A file missing at start means nothing is revoked yet (Helm installs before any revocation), with a warning.

import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { CounterVec, GaugeVec } from '../metrics/vec.js';
import { fileSignature, watchForChanges, type FileWatcher } from '../config/watch.js';
import { issuerDerOf, normalizeSerial, readRevocationLists, type RevocationList } from '../pki/crl.js';

export interface RevocationChecker {
  /** serial as node prints it (PeerCertificate.serialNumber); der the whole certificate. */
  isRevoked(serial: string, der: Buffer): boolean;
  close(): void;
}

export interface RevocationOptions {
  crlFile: string;
  clientCAFile: string;
  log?: Logger;
  registry?: Registry;
  /** How often the file is stat'ed for changes fs.watch missed. */
  pollIntervalMs?: number;
}

const DEFAULT_POLL_MS = 2_000;

/** serial (normalized hex) → issuer names (DER hex) that revoked it. */
type Index = Map<string, Set<string>>;

export async function newRevocationChecker(o: RevocationOptions): Promise<RevocationChecker> {
  const log = o.log;
  const metrics = o.registry ? revocationMetrics(o.registry) : undefined;
  let index: Index = new Map();

  const load = async (): Promise<RevocationList[] | undefined> => {
    let pem: string;
    try {
      pem = await readFile(o.crlFile, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`cannot read ${o.crlFile}: ${(e as Error).message}`);
    }
    const caPem = await readFile(o.clientCAFile, 'utf8');
    try {
      return await readRevocationLists(pem, caPem);
    } catch (e) {
      throw new Error(`${o.crlFile}: ${(e as Error).message}`);
    }
  };
  const install = (lists: RevocationList[]) => {
    const next: Index = new Map();
    for (const l of lists) {
      for (const e of l.entries) {
        let issuers = next.get(e.serial);
        if (!issuers) next.set(e.serial, (issuers = new Set()));
        issuers.add(l.issuerDer);
      }
      if (l.nextUpdate && l.nextUpdate.getTime() < Date.now()) {
        log?.warn({ file: o.crlFile, issuer: l.issuer, nextUpdate: l.nextUpdate.toISOString() }, 'client certificate revocation list is past its nextUpdate; it is still enforced, sign a new one with `fleetgate certs revoke`');
      }
    }
    index = next;
    metrics?.revoked.set(next.size);
    const nextUpdates = lists.map((l) => l.nextUpdate?.getTime()).filter((t): t is number => t !== undefined);
    if (nextUpdates.length > 0) metrics?.nextUpdate.set(Math.min(...nextUpdates) / 1000);
    log?.info({ file: o.crlFile, revoked: next.size }, 'client certificate revocation list loaded');
  };

  // Taken before the load: a list written while it is read is loaded again.
  const initialSignature = await fileSignature(o.crlFile).catch(() => undefined);
  const initial = await load();
  if (initial === undefined) {
    log?.warn({ file: o.crlFile }, 'client certificate revocation list does not exist yet; no certificate is revoked until it appears');
    metrics?.revoked.set(0);
  } else {
    install(initial);
  }
  metrics?.reloads.inc({ result: 'success' }, 0);
  metrics?.reloads.inc({ result: 'failure' }, 0);

  const watcher: FileWatcher = watchForChanges({
    dir: dirname(o.crlFile),
    intervalMs: o.pollIntervalMs ?? DEFAULT_POLL_MS,
    signature: () => fileSignature(o.crlFile),
    initialSignature,
    onChange: async () => {
      const lists = await load();
      if (lists === undefined) {
        if (index.size > 0) log?.error({ file: o.crlFile }, 'client certificate revocation list disappeared; the last one loaded stays in force');
        return;
      }
      install(lists);
      metrics?.reloads.inc({ result: 'success' });
    },
    onError: (err) => {
      metrics?.reloads.inc({ result: 'failure' });
      log?.error({ file: o.crlFile, err: (err as Error).message ?? String(err) }, 'reloading the client certificate revocation list failed; the last one loaded stays in force');
    },
  });

  return {
    isRevoked(serial, der) {
      const issuers = index.get(normalizeSerial(serial));
      if (issuers === undefined) return false;
      // Serials are unique per issuer only: a CA bundle may hold several client CAs.
      return issuers.has(issuerDerOf(der));
    },
    close() {
      watcher.close();
    },
  };
}

function revocationMetrics(registry: Registry) {
  return {
    revoked: new GaugeVec({
      name: 'fleetgate_client_certificate_revocations',
      help: 'Client certificates the revocation list in force refuses.',
      registers: [registry],
    }),
    reloads: new CounterVec({
      name: 'fleetgate_client_certificate_revocation_list_reloads_total',
      help: 'Reloads of the client certificate revocation list after the file changed, by result (a failure keeps the previous list).',
      labelNames: ['result'],
      registers: [registry],
    }),
    nextUpdate: new GaugeVec({
      name: 'fleetgate_client_certificate_revocation_list_next_update_seconds',
      help: 'Unix time of the earliest nextUpdate of the revocation lists in force: sign a new list before then.',
      registers: [registry],
    }),
  };
}
