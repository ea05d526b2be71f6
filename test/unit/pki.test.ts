import { X509Certificate, createPrivateKey, createPublicKey, generateKeyPairSync, createSign, createVerify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  certificateFingerprintSha256,
  certificateSerial,
  createCA,
  issueClientCert,
  issueServingCert,
} from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';

const DAY = 86_400_000;

/** Subject lines as node prints them ("O=dev\nCN=alice"), split into [type, value] pairs. */
function subjectPairs(cert: X509Certificate): Array<[string, string]> {
  return cert.subject.split('\n').map((l) => {
    const i = l.indexOf('=');
    return [l.slice(0, i), l.slice(i + 1)] as [string, string];
  });
}

function keyMatchesCert(keyPem: string, certPem: string): boolean {
  const sig = createSign('sha256').update('probe').sign(createPrivateKey(keyPem));
  return createVerify('sha256').update('probe').verify(new X509Certificate(certPem).publicKey, sig);
}

describe('pki', async () => {
  const ca = await createCA('fleetgate-test-ca');

  it('creates a self-signed CA with a PKCS#8 key', () => {
    const c = new X509Certificate(ca.certPem);
    expect(c.ca).toBe(true);
    expect(c.subject).toBe('CN=fleetgate-test-ca');
    expect(c.issuer).toBe('CN=fleetgate-test-ca');
    expect(c.verify(c.publicKey)).toBe(true);
    expect(ca.keyPem.startsWith('-----BEGIN PRIVATE KEY-----\n')).toBe(true);
    expect(createPrivateKey(ca.keyPem).asymmetricKeyType).toBe('ec');
    expect(keyMatchesCert(ca.keyPem, ca.certPem)).toBe(true);
    const days = (Date.parse(c.validTo) - Date.now()) / DAY;
    expect(days).toBeGreaterThan(3649);
    expect(days).toBeLessThan(3651);
  });

  it('issues a serving cert with IP and DNS SANs that verifies against the CA', async () => {
    const s = await issueServingCert(ca, ['127.0.0.1', 'localhost', '::1', 'api.fleet.example'], { days: 30 });
    const c = new X509Certificate(s.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(c.verify(caCert.publicKey)).toBe(true);
    expect(c.checkIssued(caCert)).toBe(true);
    expect(c.ca).toBe(false);
    expect(c.subject).toBe('CN=127.0.0.1');
    expect(c.subjectAltName).toBe('IP Address:127.0.0.1, DNS:localhost, IP Address:0:0:0:0:0:0:0:1, DNS:api.fleet.example');
    expect(c.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(c.checkHost('api.fleet.example')).toBe('api.fleet.example');
    expect(c.checkHost('other.example')).toBeUndefined();
    expect(c.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(keyMatchesCert(s.keyPem, s.certPem)).toBe(true);
    const days = (Date.parse(c.validTo) - Date.now()) / DAY;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);
  });

  it('uses commonName when given and rejects an empty host list', async () => {
    const s = await issueServingCert(ca, ['localhost'], { commonName: 'fleetgate' });
    expect(new X509Certificate(s.certPem).subject).toBe('CN=fleetgate');
    await expect(issueServingCert(ca, [])).rejects.toThrow('at least one host');
  });

  it('issues a client cert with CN=user and one O per group', async () => {
    const cl = await issueClientCert(ca, 'alice', ['dev', 'system:authenticated-ish']);
    const c = new X509Certificate(cl.certPem);
    expect(c.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(c.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    expect(subjectPairs(c)).toEqual([
      ['O', 'dev'],
      ['O', 'system:authenticated-ish'],
      ['CN', 'alice'],
    ]);
    expect(c.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(c.subjectAltName).toBeUndefined();
  });

  it('honours explicit notBefore/notAfter, including already-expired windows', async () => {
    const notBefore = new Date('2020-01-01T00:00:00Z');
    const notAfter = new Date('2020-01-02T00:00:00Z');
    const cl = await issueClientCert(ca, 'expired', [], { notBefore, notAfter });
    const c = new X509Certificate(cl.certPem);
    expect(new Date(c.validFrom).toISOString()).toBe(notBefore.toISOString());
    expect(new Date(c.validTo).toISOString()).toBe(notAfter.toISOString());
    await expect(issueClientCert(ca, 'x', [], { notBefore: notAfter, notAfter: notBefore })).rejects.toThrow('validity is empty');
  });

  it('does not verify against a different CA', async () => {
    const other = await createCA('other');
    const cl = await issueClientCert(other, 'mallory', ['system:masters']);
    const c = new X509Certificate(cl.certPem);
    expect(c.checkIssued(new X509Certificate(ca.certPem))).toBe(false);
    expect(c.verify(new X509Certificate(ca.certPem).publicKey)).toBe(false);
  });

  it('signs with an RSA CA key given as PKCS#1 PEM', async () => {
    // A CA made by other tools (kubeadm's is RSA): reuse our cert shape but swap in an RSA self-signed CA.
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rsaPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    // Self-sign with the RSA key by issuing from a CA whose key is RSA: build one via issue path.
    const rsaCaCert = await selfSignedWith(rsaPem);
    const cl = await issueClientCert({ certPem: rsaCaCert, keyPem: rsaPem }, 'bob', ['ops']);
    const c = new X509Certificate(cl.certPem);
    expect(c.verify(createPublicKey(rsaPem))).toBe(true);
  });

  it('reports serial and SHA-256 fingerprint', async () => {
    const a = await issueClientCert(ca, 'a', []);
    const b = await issueClientCert(ca, 'a', []);
    const c = new X509Certificate(a.certPem);
    expect(certificateSerial(a.certPem)).toBe(c.serialNumber.toUpperCase());
    expect(certificateSerial(a.certPem)).toMatch(/^[0-9A-F]+$/);
    expect(certificateSerial(a.certPem)).not.toBe(certificateSerial(b.certPem));
    expect(certificateFingerprintSha256(a.certPem)).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(certificateFingerprintSha256(a.certPem)).toBe(c.fingerprint256);
  });
});

describe('buildKubeconfig', () => {
  it('writes base64 data, one context and current-context', () => {
    const y = buildKubeconfig({
      name: 'member-a',
      server: 'https://127.0.0.1:6443',
      caPem: 'CA',
      user: 'admin',
      clientCertPem: 'CERT',
      clientKeyPem: 'KEY',
      namespace: 'demo',
    });
    const k = parse(y);
    expect(k['current-context']).toBe('member-a');
    expect(k.clusters).toEqual([
      { name: 'member-a', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority-data': 'Q0E=' } },
    ]);
    expect(k.users).toEqual([{ name: 'admin', user: { 'client-certificate-data': 'Q0VSVA==', 'client-key-data': 'S0VZ' } }]);
    expect(k.contexts).toEqual([{ name: 'member-a', context: { cluster: 'member-a', user: 'admin', namespace: 'demo' } }]);
  });

  it('supports bearer tokens and rejects a cert without its key', () => {
    const k = parse(buildKubeconfig({ name: 'x', server: 'https://h', caPem: 'CA', user: 'u', token: 't0k' }));
    expect(k.users[0].user).toEqual({ token: 't0k' });
    expect(k.contexts[0].context).toEqual({ cluster: 'x', user: 'u' });
    expect(() => buildKubeconfig({ name: 'x', server: 'https://h', caPem: 'CA', user: 'u', clientCertPem: 'C' })).toThrow(
      'must be given together',
    );
  });
});

/** A self-signed RSA CA certificate, made with the library directly so the test does not depend on createCA. */
async function selfSignedWith(rsaPkcs1Pem: string): Promise<string> {
  await import('../../src/pki/reflect-metadata.js');
  const x509 = await import('@peculiar/x509');
  const { webcrypto } = await import('node:crypto');
  const der = createPrivateKey(rsaPkcs1Pem).export({ type: 'pkcs8', format: 'der' });
  const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  const privateKey = await webcrypto.subtle.importKey('pkcs8', der, alg, true, ['sign']);
  const spki = createPublicKey(rsaPkcs1Pem).export({ type: 'spki', format: 'der' });
  const publicKey = await webcrypto.subtle.importKey('spki', spki, alg, true, ['verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    { name: 'CN=rsa-ca', keys: { privateKey, publicKey }, extensions: [new x509.BasicConstraintsExtension(true, undefined, true)] },
    webcrypto as never,
  );
  return cert.toString('pem');
}
