// Certificates the gateway's own PKI (src/pki) does not issue, for tests: an intermediate CA.

import { createPrivateKey, webcrypto } from 'node:crypto';
import '../../src/pki/reflect-metadata.js';
import * as x509 from '@peculiar/x509';
import type { CertKeyPem } from '../../src/pki/index.js';

/** A CA issued by ca (an intermediate), as a CertKeyPem that issueClientCert takes. */
export async function intermediateCA(ca: CertKeyPem, commonName: string): Promise<CertKeyPem> {
  const crypto = webcrypto;
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await crypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const parent = new x509.X509Certificate(ca.certPem);
  const parentKey = await crypto.subtle.importKey('pkcs8', createPrivateKey(ca.keyPem).export({ type: 'pkcs8', format: 'der' }), alg, false, ['sign']);
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: '0' + Date.now().toString(16),
      subject: `CN=${commonName}`,
      issuer: new x509.Name(parent.subjectName.toArrayBuffer()),
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
      publicKey: keys.publicKey,
      signingKey: parentKey,
      signingAlgorithm: alg,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
        await x509.AuthorityKeyIdentifierExtension.create(parent.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  return { certPem: cert.toString('pem') + '\n', keyPem: `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n` };
}

