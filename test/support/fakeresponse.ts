// A ServerResponse stand-in for serving a watch or list without a socket: records what is written, and with a
// capacity behaves as a connection that holds that many bytes until the client reads (read()).

import { EventEmitter } from 'node:events';

export class FakeResponse extends EventEmitter {
  writes: string[] = [];
  headersSent = false;
  writableEnded = false;
  destroyed = false;
  /** Without a capacity it is the test's to set (a client that stopped reading). */
  writableLength = 0;

  constructor(private readonly capacity = Infinity) {
    super();
  }
  setHeader(): void {}
  writeHead(): this {
    this.headersSent = true;
    return this;
  }
  flushHeaders(): void {}
  private corked = 0;
  private corkedWrites: string[] = [];
  /** Corked writes are recorded as one, as a socket sends them in one writev. */
  cork(): void {
    this.corked++;
  }
  uncork(): void {
    if (this.corked === 0 || --this.corked > 0) return;
    if (this.corkedWrites.length > 0) this.writes.push(this.corkedWrites.join(''));
    this.corkedWrites = [];
  }
  write(chunk: Buffer | string): boolean {
    (this.corked > 0 ? this.corkedWrites : this.writes).push(chunk.toString());
    if (this.capacity === Infinity) return true;
    this.writableLength += chunk.length;
    return this.writableLength < this.capacity;
  }
  end(chunk?: string): this {
    this.corked = Math.min(this.corked, 1);
    this.uncork();
    if (chunk) this.writes.push(chunk);
    this.writableEnded = true;
    return this;
  }
  /** The client reads everything sent so far. */
  read(): void {
    if (this.writableLength === 0) return;
    this.writableLength = 0;
    this.emit('drain');
  }
  lines(): Array<{ type: string; object: any }> {
    return this.writes.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }
}
