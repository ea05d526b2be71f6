// A PEM bundle of certificates (a client CA file), read the one way every part of the gateway reads it: the
// configuration check at load, the listener's reload and the authenticator, which must agree on what it trusts.

import { X509Certificate } from 'node:crypto';

/** A PEM certificate block; kube's files and `fleetgate certs` write only this label. */
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * Every certificate of a PEM bundle, in order; throws naming the first block that does not parse, or when there is
 * none. `name` says which bundle in the messages (a file's name, quoted).
 */
export function certificateBundle(pem: string | Buffer, name: string): X509Certificate[] {
  const blocks = String(pem).match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new Error(`${name} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch (err) {
      throw new Error(`certificate ${i + 1} in ${name} does not parse: ${(err as Error).message}`);
    }
  });
}
