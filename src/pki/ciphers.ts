// TLS cipher suites in the order Go's crypto/tls prefers them on machines with AES instructions, which is what
// kube-apiserver serves and client-go offers: AES-128-GCM first. Node's default puts AES-256-GCM first, which costs
// a third more CPU per byte for the same protection class (openssl speed here: 4.5 GB/s against 2.9 GB/s), on both
// ends of every large list and watch.

import { constants } from 'node:crypto';
import { DEFAULT_CIPHERS } from 'node:tls';

const TLS13_GO_ORDER = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'];

/** The TLS 1.3 suites in Go's order, then Node's TLS 1.2 list (already AES-128-GCM first) unchanged. */
export const CIPHERS = [...TLS13_GO_ORDER, ...DEFAULT_CIPHERS.split(':').filter((c) => !c.startsWith('TLS_'))].join(':');

/**
 * A server picks from its own order, as Go's does, except that a client listing ChaCha20-Poly1305 first (one
 * without AES instructions) gets it: Go's server makes the same exception.
 */
export const SERVER_CIPHER_OPTIONS = {
  ciphers: CIPHERS,
  honorCipherOrder: true,
  secureOptions: constants.SSL_OP_PRIORITIZE_CHACHA,
} as const;
