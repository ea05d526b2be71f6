// Certificates for clusters, clients and the gateway: a CA, serving certs and client certs whose subject is
// what Kubernetes' x509 authenticator reads (CN = user name, one O per group).
// ECDSA P-256 because it is fast to generate and every Go TLS stack (kube-apiserver, kubectl) accepts it;
// CAs made elsewhere (RSA or EC, PKCS#8, SEC1 or PKCS#1 PEM) can still sign.

import { createPrivateKey, webcrypto, X509Certificate as NodeX509, randomBytes } from 'node:crypto';
import type { webcrypto as wc } from 'node:crypto';
import { isIP } from 'node:net';
import './reflect-metadata.js';
import * as x509 from '@peculiar/x509';

export interface CertKeyPem {
  certPem: string;
  /** PKCS#8 "PRIVATE KEY" PEM. */
  keyPem: string;
}

export interface IssueOptions {
  days?: number;
}

type CryptoKey = wc.CryptoKey;
type CryptoKeyPair = wc.CryptoKeyPair;

const crypto = webcrypto;
const EC_P256: wc.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };
const DAY_MS = 86_400_000;
// Backdated so a certificate made now is valid on a peer whose clock is a little behind (kubeadm does the same).
const CLOCK_SKEW_MS = 5 * 60_000;

export async function createCA(commonName: string, opts: IssueOptions = {}): Promise<CertKeyPem> {
  const keys = await newKeyPair();
  const { notBefore, notAfter } = validity(opts.days ?? 3650);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: newSerial(),
      name: [{ CN: [commonName] }],
      notBefore,
      notAfter,
      keys,
      signingAlgorithm: signingAlgorithmFor(keys.privateKey),
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem') + '\n', keyPem: await exportKeyPem(keys.privateKey) };
}

/** A serving certificate for hosts; each host becomes an IP SAN if it parses as an IP address, a DNS SAN otherwise. */
export async function issueServingCert(
  ca: CertKeyPem,
  hosts: string[],
  opts: IssueOptions & { commonName?: string } = {},
): Promise<CertKeyPem> {
  if (hosts.length === 0) throw new Error('issueServingCert: at least one host is required');
  const names: x509.JsonGeneralName[] = hosts.map((h) => ({ type: isIP(stripBrackets(h)) ? 'ip' : 'dns', value: stripBrackets(h) }));
  return issue(ca, {
    subject: [{ CN: [opts.commonName ?? hosts[0]!] }],
    ...validity(opts.days ?? 365),
    usages: [x509.ExtendedKeyUsage.serverAuth],
    extra: [new x509.SubjectAlternativeNameExtension(names, false)],
  });
}

/** A client certificate as Kubernetes' x509 authenticator reads it: CN is the user name, each O one group. */
export async function issueClientCert(
  ca: CertKeyPem,
  user: string,
  groups: string[],
  opts: IssueOptions & { notBefore?: Date; notAfter?: Date } = {},
): Promise<CertKeyPem> {
  if (!user) throw new Error('issueClientCert: user must not be empty');
  const v = validity(opts.days ?? 365);
  return issue(ca, {
    // Go orders O before CN when it writes a subject; kubeadm's admin.conf looks the same.
    subject: [...groups.map((g) => ({ O: [g] })), { CN: [user] }],
    notBefore: opts.notBefore ?? v.notBefore,
    notAfter: opts.notAfter ?? v.notAfter,
    usages: [x509.ExtendedKeyUsage.clientAuth],
    extra: [],
  });
}

/** Serial number as upper-case hex without separators, as node:crypto and openssl print it. */
export function certificateSerial(pem: string): string {
  return new NodeX509(pem).serialNumber.toUpperCase();
}

/** SHA-256 fingerprint of the DER certificate, colon-separated upper-case hex (`openssl x509 -fingerprint -sha256`). */
export function certificateFingerprintSha256(pem: string): string {
  return new NodeX509(pem).fingerprint256;
}

interface IssueSpec {
  subject: x509.JsonName;
  notBefore: Date;
  notAfter: Date;
  usages: x509.ExtendedKeyUsage[];
  extra: x509.Extension[];
}

async function issue(ca: CertKeyPem, spec: IssueSpec): Promise<CertKeyPem> {
  if (spec.notAfter.getTime() <= spec.notBefore.getTime()) {
    throw new Error(`certificate validity is empty: notAfter ${spec.notAfter.toISOString()} is not after notBefore ${spec.notBefore.toISOString()}`);
  }
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await importSigningKey(ca.keyPem);
  const keys = await newKeyPair();
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: newSerial(),
      subject: spec.subject,
      // The issuer must be the CA's subject byte for byte: Go finds the parent by raw name.
      issuer: new x509.Name(caCert.subjectName.toArrayBuffer()),
      notBefore: spec.notBefore,
      notAfter: spec.notAfter,
      publicKey: keys.publicKey,
      signingKey: caKey,
      signingAlgorithm: signingAlgorithmFor(caKey),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension(spec.usages, false),
        await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey, false, crypto),
        ...spec.extra,
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem') + '\n', keyPem: await exportKeyPem(keys.privateKey) };
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  if (!(days > 0)) throw new Error(`certificate lifetime must be positive, got ${days} days`);
  const now = Date.now();
  return { notBefore: new Date(now - CLOCK_SKEW_MS), notAfter: new Date(now + days * DAY_MS) };
}

/** 128 random bits, top bit clear so the DER INTEGER stays positive (Go rejects negative serials). */
function newSerial(): string {
  const b = randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x01;
  return b.toString('hex');
}

async function newKeyPair(): Promise<CryptoKeyPair> {
  return (await crypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function exportKeyPem(key: CryptoKey): Promise<string> {
  const der = await crypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY') + '\n';
}

/** Imports a CA key in any PEM form node:crypto reads, for WebCrypto signing. */
export async function importSigningKey(pem: string): Promise<CryptoKey> {
  const key = createPrivateKey(pem);
  const der = key.export({ type: 'pkcs8', format: 'der' });
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      const namedCurve = curve === 'prime256v1' ? 'P-256' : curve === 'secp384r1' ? 'P-384' : curve === 'secp521r1' ? 'P-521' : undefined;
      if (!namedCurve) throw new Error(`unsupported CA key curve ${curve}`);
      return crypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve }, false, ['sign']);
    }
    case 'rsa':
      return crypto.subtle.importKey('pkcs8', der, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']);
    default:
      throw new Error(`unsupported CA key type ${key.asymmetricKeyType}`);
  }
}

export function signingAlgorithmFor(key: CryptoKey): wc.Algorithm | wc.EcdsaParams {
  if (key.algorithm.name === 'ECDSA') {
    const curve = (key.algorithm as wc.EcKeyAlgorithm).namedCurve;
    return { name: 'ECDSA', hash: curve === 'P-384' ? 'SHA-384' : curve === 'P-521' ? 'SHA-512' : 'SHA-256' } as wc.EcdsaParams;
  }
  return { name: key.algorithm.name, hash: 'SHA-256' } as wc.Algorithm;
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
