// Certificate revocation lists (RFC 5280 §5) for the client CA: `fleetgate certs revoke` signs one, the gateway
// reads it and refuses the certificates it lists. kube-apiserver cannot take a client certificate back before it
// expires; a CRL signed by the same CA lets an operator do it without rotating the CA and every user's kubeconfig.

import { webcrypto } from 'node:crypto';
import './reflect-metadata.js';
import * as x509 from '@peculiar/x509';
import { importSigningKey, signingAlgorithmFor, type CertKeyPem } from './index.js';

const crypto = webcrypto;
const DAY_MS = 86_400_000;
const OID_CRL_NUMBER = '2.5.29.20';
const PEM_CRL = 'X509 CRL';

/** The RFC 5280 reasons an operator can give for a client certificate (the CA-level ones make no sense here). */
export const REVOCATION_REASONS = {
  unspecified: x509.X509CrlReason.unspecified,
  keyCompromise: x509.X509CrlReason.keyCompromise,
  affiliationChanged: x509.X509CrlReason.affiliationChanged,
  superseded: x509.X509CrlReason.superseded,
  cessationOfOperation: x509.X509CrlReason.cessationOfOperation,
  privilegeWithdrawn: x509.X509CrlReason.privilegeWithdrawn,
} as const;
export type RevocationReason = keyof typeof REVOCATION_REASONS;

export interface RevokedEntry {
  /** Normalized: lower-case hex, no separators, no leading zeros (normalizeSerial). */
  serial: string;
  revokedAt: Date;
  reason?: RevocationReason;
}

export interface RevocationList {
  /** DER of the issuer's name, hex: the certificates it speaks for are those with exactly this issuer. */
  issuerDer: string;
  /** The issuer as text, for messages. */
  issuer: string;
  number?: bigint;
  thisUpdate: Date;
  nextUpdate?: Date;
  entries: RevokedEntry[];
}

/** Serials are compared as numbers: "0A:1b", "0a1B" and "a1b" are one serial. */
export function normalizeSerial(s: string): string {
  const hex = s.replace(/[:\s]/g, '').toLowerCase().replace(/^0+(?=.)/, '');
  if (!/^[0-9a-f]+$/.test(hex)) throw new Error(`${JSON.stringify(s)} is not a hexadecimal serial number`);
  return hex;
}

/**
 * A CRL signed by ca listing entries, with CRL number `number` (RFC 5280 wants it to grow with every CRL an issuer
 * publishes) and valid for `days` (nextUpdate is mandatory in a conforming CRL; the gateway warns once it passes).
 */
export async function signRevocationList(ca: CertKeyPem, entries: RevokedEntry[], opts: { number: bigint; days?: number; now?: Date }): Promise<string> {
  const caCert = new x509.X509Certificate(ca.certPem);
  const key = await importSigningKey(ca.keyPem);
  const now = opts.now ?? new Date();
  const crl = await x509.X509CrlGenerator.create(
    {
      issuer: new x509.Name(caCert.subjectName.toArrayBuffer()),
      thisUpdate: now,
      nextUpdate: new Date(now.getTime() + (opts.days ?? 365) * DAY_MS),
      signingKey: key,
      signingAlgorithm: signingAlgorithmFor(key),
      extensions: [
        await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey, false, crypto),
        new x509.Extension(OID_CRL_NUMBER, false, derInteger(opts.number)),
      ],
      entries: entries.map((e) => ({
        serialNumber: e.serial.length % 2 === 1 ? '0' + e.serial : e.serial,
        revocationDate: e.revokedAt,
        ...(e.reason !== undefined ? { reason: REVOCATION_REASONS[e.reason] } : {}),
      })),
    },
    crypto,
  );
  // openssl, Go's x509.ParseRevocationList users and RFC 7468 name the block "X509 CRL"; the library writes "CRL".
  return x509.PemConverter.encode(crl.rawData, PEM_CRL) + '\n';
}

/**
 * Every CRL in a PEM bundle, each verified against the CA in caBundlePem whose subject is the CRL's issuer.
 * Throws an Error saying what is wrong (no CRL, not parseable, no such issuer, bad signature).
 */
export async function readRevocationLists(pem: string, caBundlePem: string): Promise<RevocationList[]> {
  const blocks = x509.PemConverter.decodeWithHeaders(pem).filter((b) => b.type === PEM_CRL || b.type === x509.PemConverter.CrlTag);
  if (blocks.length === 0 && pem.trim() !== '') throw new Error(`no "-----BEGIN ${PEM_CRL}-----" block found`);
  const cas = x509.PemConverter.decodeWithHeaders(caBundlePem)
    .filter((b) => b.type === x509.PemConverter.CertificateTag)
    .map((b) => new x509.X509Certificate(b.rawData));
  const lists: RevocationList[] = [];
  for (const [i, block] of blocks.entries()) {
    const where = blocks.length > 1 ? `CRL ${i + 1}: ` : '';
    let crl: x509.X509Crl;
    try {
      crl = new x509.X509Crl(block.rawData);
    } catch (e) {
      throw new Error(`${where}not a valid X.509 CRL: ${(e as Error).message}`);
    }
    const issuerDer = hex(crl.issuerName.toArrayBuffer());
    const candidates = cas.filter((c) => hex(c.subjectName.toArrayBuffer()) === issuerDer);
    if (candidates.length === 0) throw new Error(`${where}issued by "${crl.issuer}", which is not a CA of the client CA bundle`);
    let verified = false;
    for (const ca of candidates) if (await crl.verify({ publicKey: ca.publicKey }, crypto).catch(() => false)) verified = true;
    if (!verified) throw new Error(`${where}its signature does not verify with the key of "${crl.issuer}"`);
    const numberExt = crl.getExtension(OID_CRL_NUMBER);
    lists.push({
      issuerDer,
      issuer: crl.issuer,
      ...(numberExt ? { number: readDerInteger(new Uint8Array(numberExt.value)) } : {}),
      thisUpdate: crl.thisUpdate,
      ...(crl.nextUpdate ? { nextUpdate: crl.nextUpdate } : {}),
      entries: crl.entries.map((e) => ({
        serial: normalizeSerial(e.serialNumber),
        revokedAt: e.revocationDate,
        ...(e.reason !== undefined ? { reason: reasonName(e.reason) } : {}),
      })),
    });
  }
  return lists;
}

/** DER of a certificate's issuer name, hex: what RevocationList.issuerDer is compared with. */
export function issuerDerOf(certDer: Buffer): string {
  return hex(new x509.X509Certificate(certDer).issuerName.toArrayBuffer());
}

function reasonName(r: x509.X509CrlReason): RevocationReason {
  const found = (Object.entries(REVOCATION_REASONS) as Array<[RevocationReason, x509.X509CrlReason]>).find(([, v]) => v === r);
  return found ? found[0] : 'unspecified';
}

function hex(b: ArrayBuffer): string {
  return Buffer.from(b).toString('hex');
}

// A non-negative DER INTEGER (tag, short or long length, big-endian two's complement), for the CRL number.
function derInteger(n: bigint): Uint8Array {
  let h = n.toString(16);
  if (h.length % 2) h = '0' + h;
  if (parseInt(h.slice(0, 2), 16) & 0x80) h = '00' + h;
  const body = Buffer.from(h, 'hex');
  return Uint8Array.from([0x02, body.length, ...body]);
}

function readDerInteger(der: Uint8Array): bigint | undefined {
  if (der[0] !== 0x02 || der.length < 3 || der[1]! > 20 || der[1] !== der.length - 2) return undefined;
  return BigInt('0x' + Buffer.from(der.subarray(2)).toString('hex'));
}
