// Client certificates against the client CA bundle in force (src/authn: setClientCAs, connectionAccepted): a
// connection is checked again only when the bundle changed since the bundle its handshake used, which is the one of
// its secure context, even when a reload came while the handshake was under way.

import { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { newAuthenticator } from '../../src/authn/index.js';
import { createCA, issueClientCert, type CertKeyPem } from '../../src/pki/index.js';
import { intermediateCA } from '../support/pki.js';

/** What node's TLS socket says of a verified client: the chain it links, leaf first (a root links to itself). */
function verifiedSocket(chainPems: string[]) {
  const certs = chainPems.map((p) => new X509Certificate(p));
  const peers = certs.map((c) => ({
    raw: c.raw,
    subject: Object.fromEntries(c.subject.split('\n').map((l) => l.split('=') as [string, string])),
    serialNumber: c.serialNumber,
    valid_from: c.validFrom,
    valid_to: c.validTo,
    ext_key_usage: ['1.3.6.1.5.5.7.3.2'],
    issuerCertificate: undefined as unknown,
  }));
  peers.forEach((p, i) => (p.issuerCertificate = peers[i + 1] ?? p));
  return { authorized: true, getPeerCertificate: () => peers[0] };
}

const requestOn = (socket: object) => ({ socket, headers: {} }) as unknown as IncomingMessage;

let caA: CertKeyPem;
let caB: CertKeyPem;
let erin: CertKeyPem;

beforeAll(async () => {
  caA = await createCA('bundle-a');
  caB = await createCA('bundle-b');
  erin = await issueClientCert(caA, 'erin', ['dev']);
});

describe('client certificates and the client CA bundle in force', () => {
  it('checks a connection whose handshake used a bundle since replaced, even when it was accepted after the reload', async () => {
    const authn = await newAuthenticator({ anonymous: false, x509: true, oidc: [] });
    const contextA = {};
    const contextB = {};
    authn.setClientCAs([new X509Certificate(caA.certPem)], contextA);
    // The reload comes while erin's handshake, on a connection accepted under A, is under way.
    authn.setClientCAs([new X509Certificate(caB.certPem)], contextB);
    const socket = verifiedSocket([erin.certPem, caA.certPem]);
    authn.connectionAccepted(socket, contextA);
    await expect(authn.authenticate(requestOn(socket))).rejects.toMatchObject({ status: { code: 401 } });
    // Under a bundle that still holds A, the same kind of connection is erin.
    authn.setClientCAs([new X509Certificate(caB.certPem), new X509Certificate(caA.certPem)], contextA);
    const again = verifiedSocket([erin.certPem, caA.certPem]);
    authn.connectionAccepted(again, contextA);
    expect((await authn.authenticate(requestOn(again)))?.username).toBe('erin');
    authn.close();
  });

  it('does not check open connections again when a reload brings the same certificates (a serving certificate rotation)', async () => {
    const authn = await newAuthenticator({ anonymous: false, x509: true, oidc: [] });
    // The bundle holds the root; the client sends its intermediate with its leaf.
    const inter = await intermediateCA(caA, 'sent-intermediate');
    const frank = await issueClientCert(inter, 'frank', ['dev']);
    const context = {};
    authn.setClientCAs([new X509Certificate(caA.certPem)], context);
    // A resumed session: node no longer has the chain the client sent, only the leaf, from which no path to the root
    // can be built. Its handshake was verified all the same, under this bundle.
    const resumed = verifiedSocket([frank.certPem]);
    authn.connectionAccepted(resumed, context);
    expect((await authn.authenticate(requestOn(resumed)))?.username).toBe('frank');
    authn.setClientCAs([new X509Certificate(caA.certPem)], {});
    expect((await authn.authenticate(requestOn(resumed)))?.username).toBe('frank');
    // A bundle that does change is checked against: the leaf alone reaches no anchor.
    authn.setClientCAs([new X509Certificate(caA.certPem), new X509Certificate(caB.certPem)], {});
    await expect(authn.authenticate(requestOn(resumed))).rejects.toMatchObject({ status: { code: 401 } });
    authn.close();
  });

  it('checks a connection of an unknown secure context at its first request', async () => {
    const authn = await newAuthenticator({ anonymous: false, x509: true, oidc: [] });
    authn.setClientCAs([new X509Certificate(caA.certPem)], {});
    authn.setClientCAs([new X509Certificate(caB.certPem)], {});
    const socket = verifiedSocket([erin.certPem, caA.certPem]);
    authn.connectionAccepted(socket, { unknown: true });
    await expect(authn.authenticate(requestOn(socket))).rejects.toMatchObject({ status: { code: 401 } });
    authn.close();
  });
});
