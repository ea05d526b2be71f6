import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/index.js';
import { normalizeSerial, readRevocationLists, signRevocationList } from '../../src/pki/crl.js';
import { createCA } from '../../src/pki/index.js';

describe('revocation lists', () => {
  it('round-trips entries, reasons and the list number, verified against the CA', async () => {
    const ca = await createCA('client-ca');
    const at = new Date('2026-01-02T03:04:05Z');
    const pem = await signRevocationList(ca, [{ serial: 'abc', revokedAt: at, reason: 'keyCompromise' }, { serial: '7f00', revokedAt: at }], { number: 300n, days: 10, now: at });
    expect(pem).toMatch(/^-----BEGIN X509 CRL-----\n/);
    const [list, ...rest] = await readRevocationLists(pem, ca.certPem);
    expect(rest).toEqual([]);
    expect(list!.number).toBe(300n);
    expect(list!.issuer).toBe('CN=client-ca');
    expect(list!.nextUpdate!.toISOString()).toBe('2026-01-12T03:04:05.000Z');
    expect(list!.entries).toEqual([
      { serial: 'abc', revokedAt: at, reason: 'keyCompromise' },
      { serial: '7f00', revokedAt: at },
    ]);
  });

  it('refuses a list another key signed, one of an unknown issuer, and garbage', async () => {
    const ca = await createCA('client-ca');
    const impostor = await createCA('client-ca');
    const other = await createCA('other');
    const forged = await signRevocationList(impostor, [], { number: 1n });
    await expect(readRevocationLists(forged, ca.certPem)).rejects.toThrow('its signature does not verify with the key of "CN=client-ca"');
    await expect(readRevocationLists(await signRevocationList(other, [], { number: 1n }), ca.certPem)).rejects.toThrow('issued by "CN=other", which is not a CA of the client CA bundle');
    await expect(readRevocationLists('hello', ca.certPem)).rejects.toThrow('no "-----BEGIN X509 CRL-----" block found');
    // A bundle of two CAs: each list is verified against its own issuer.
    const both = await readRevocationLists(forged + (await signRevocationList(ca, [], { number: 2n })), impostor.certPem + ca.certPem);
    expect(both.map((l) => l.number)).toEqual([1n, 2n]);
  });

  it('is readable by openssl', async (ctx) => {
    try {
      execFileSync('openssl', ['version']);
    } catch {
      ctx.skip();
    }
    const ca = await createCA('client-ca');
    const dir = mkdtempSync(join(tmpdir(), 'crl-'));
    writeFileSync(join(dir, 'ca.crt'), ca.certPem);
    writeFileSync(join(dir, 'l.crl'), await signRevocationList(ca, [{ serial: '1234', revokedAt: new Date() }], { number: 7n }));
    const out = execFileSync('openssl', ['crl', '-in', join(dir, 'l.crl'), '-CAfile', join(dir, 'ca.crt'), '-noout', '-text'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(out).toContain('Serial Number: 1234');
    expect(out).toMatch(/X509v3 CRL Number:\s*\n\s*7/);
  });

  it('normalizes serials the way they are printed', () => {
    expect(normalizeSerial('00:0A:bC')).toBe('abc');
    expect(normalizeSerial('0')).toBe('0');
    expect(() => normalizeSerial('xyz')).toThrow('"xyz" is not a hexadecimal serial number');
  });
});

describe('server.tls.clientCRLFile', () => {
  const base = (extra: string) => `server:\n  tls:\n    certFile: /s.crt\n    keyFile: /s.key\n${extra}controlPlane:\n  kubeconfig: /cp.kubeconfig\n`;
  const errors = (yaml: string, checkFiles = false) => {
    try {
      parseConfig(yaml, '/etc/fleetgate/config.yaml', { checkFiles });
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as ConfigError).errors;
    }
    return [];
  };

  it('needs a client CA, and resolves against the config file', () => {
    expect(errors(base('    clientCRLFile: c.crl\n'))).toContain('config: server.tls.clientCRLFile: needs server.tls.clientCAFile (the CA whose certificates the list revokes)');
    const c = parseConfig(base('    clientCAFile: ca.crt\n    clientCRLFile: c.crl\n'), '/etc/fleetgate/config.yaml', { checkFiles: false });
    expect(c.server.tls.clientCRLFile).toBe('/etc/fleetgate/c.crl');
  });

  it('accepts a list that does not exist yet and refuses a file that is no CRL', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crlcfg-'));
    writeFileSync(join(dir, 'not.crl'), 'hello\n');
    const yaml = base(`    clientCAFile: ${join(dir, 'ca.crt')}\n    clientCRLFile: ${join(dir, 'not.crl')}\n`);
    expect(errors(yaml, true).filter((e) => e.includes('clientCRLFile'))).toEqual([
      `config: server.tls.clientCRLFile: "${join(dir, 'not.crl')}" holds no PEM certificate revocation list (-----BEGIN X509 CRL-----); make one with fleetgate certs revoke`,
    ]);
    expect(errors(yaml.replace('not.crl', 'absent.crl'), true).filter((e) => e.includes('clientCRLFile'))).toEqual([]);
  });
});
