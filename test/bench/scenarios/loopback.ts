// What one message exchange between two Node.js processes costs on this machine, over loopback TCP and TLS: the
// unit a proxy hop adds (a request through the gateway makes two exchanges where a direct one makes one). An echo
// server in a child process; the round trip's wall time, and this thread's CPU per round trip (schedstat).

import { fork } from 'node:child_process';
import { connect as netConnect, createServer as netServer, type Socket } from 'node:net';
import { connect as tlsConnect, createServer as tlsServer } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { SERVER_CIPHER_OPTIONS } from '../../../src/pki/ciphers.js';
import { mainThreadCpuNs } from '../lib.js';

export interface RoundTrip {
  rttUs: number;
  cpuUsPerRoundTrip: number;
}

interface EchoSpec {
  tls?: { certPem: string; keyPem: string };
}

/** Round trips of a 600-byte message (about a GET's size) after a warm-up; the child echoes each. */
export async function loopbackRoundTrip(spec: EchoSpec & { caPem?: string }, n = 5_000): Promise<RoundTrip> {
  const child = fork(fileURLToPath(import.meta.url), ['echo'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m) => resolve(Number(m)));
      child.once('exit', (code) => reject(new Error(`loopback echo exited with ${code}`)));
      child.send({ tls: spec.tls });
    });
    const socket: Socket = spec.tls
      ? tlsConnect({ port, host: '127.0.0.1', ca: spec.caPem })
      : netConnect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once(spec.tls ? 'secureConnect' : 'connect', () => resolve());
      socket.once('error', reject);
    });
    const warm = 500;
    const msg = Buffer.alloc(600, 0x61);
    return await new Promise<RoundTrip>((resolve, reject) => {
      let got = 0;
      let t0 = 0;
      let c0 = 0;
      let seen = 0;
      socket.once('error', reject);
      socket.on('data', (d) => {
        got += d.length;
        if (got < msg.length) return;
        got -= msg.length;
        const done = ++seen;
        if (done === warm) {
          t0 = performance.now();
          c0 = mainThreadCpuNs();
        }
        if (done === warm + n) {
          const r = { rttUs: ((performance.now() - t0) * 1000) / n, cpuUsPerRoundTrip: (mainThreadCpuNs() - c0) / 1000 / n };
          socket.destroy();
          return resolve(r);
        }
        socket.write(msg);
      });
      socket.write(msg);
    });
  } finally {
    child.kill();
  }
}

if (process.argv[2] === 'echo') {
  process.once('message', (m: EchoSpec) => {
    const onConn = (s: Socket) => {
      s.setNoDelay(true);
      s.on('data', (d) => s.write(d));
    };
    const srv = m.tls ? tlsServer({ cert: m.tls.certPem, key: m.tls.keyPem, ...SERVER_CIPHER_OPTIONS }, onConn) : netServer(onConn);
    srv.listen(0, '127.0.0.1', () => process.send!((srv.address() as { port: number }).port));
    process.once('disconnect', () => process.exit(0));
  });
}
