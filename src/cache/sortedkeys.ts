// An ordered set of string keys in chunks, so inserts and deletes stay cheap at a million keys (a flat sorted
// array would move every key after the insertion point) while in-order iteration from any key stays simple.

const MAX_CHUNK = 512;

export class SortedKeys {
  private chunks: string[][] = [];
  private count = 0;
  /** Bumped by every insert and delete, so iterators that outlive a change find their place again. */
  private version = 0;

  get size(): number {
    return this.count;
  }

  /** Index of the chunk that holds or would hold key. */
  private chunkFor(key: string): number {
    const chunks = this.chunks;
    let lo = 0;
    let hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (chunks[mid][0] <= key) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  add(key: string): boolean {
    if (this.chunks.length === 0) {
      this.chunks.push([key]);
      this.count = 1;
      return true;
    }
    // After the last key (an index built in key order, Store.buildIndex): appended, filling chunks whole.
    const last = this.chunks[this.chunks.length - 1];
    if (key > last[last.length - 1]) {
      if (last.length < MAX_CHUNK) last.push(key);
      else this.chunks.push([key]);
      this.count++;
      this.version++;
      return true;
    }
    const ci = this.chunkFor(key);
    const chunk = this.chunks[ci];
    const i = lowerBound(chunk, key);
    if (chunk[i] === key) return false;
    chunk.splice(i, 0, key);
    this.count++;
    this.version++;
    if (chunk.length > MAX_CHUNK) {
      this.chunks.splice(ci + 1, 0, chunk.splice(chunk.length >>> 1));
    }
    return true;
  }

  delete(key: string): boolean {
    if (this.chunks.length === 0) return false;
    const ci = this.chunkFor(key);
    const chunk = this.chunks[ci];
    const i = lowerBound(chunk, key);
    if (chunk[i] !== key) return false;
    chunk.splice(i, 1);
    this.count--;
    this.version++;
    if (chunk.length === 0) this.chunks.splice(ci, 1);
    return true;
  }

  /**
   * Keys >= from (all keys when from is empty), in order. Safe across inserts and deletes made while it is
   * suspended (a list streamed over many writes): positions shift then, so it finds its place again after the last
   * key it gave. Keys present throughout are never skipped or repeated.
   */
  *from(from = ''): IterableIterator<string> {
    let seek = from;
    let after = false;
    scan: for (;;) {
      const chunks = this.chunks;
      if (chunks.length === 0) return;
      const version = this.version;
      let ci = seek ? this.chunkFor(seek) : 0;
      let i = seek ? lowerBound(chunks[ci], seek) : 0;
      if (after && chunks[ci][i] === seek) i++;
      for (; ci < chunks.length; ci++, i = 0) {
        const chunk = chunks[ci];
        for (; i < chunk.length; i++) {
          const key = chunk[i];
          yield key;
          if (this.version !== version) {
            seek = key;
            after = true;
            continue scan;
          }
        }
      }
      return;
    }
  }

  /**
   * Up to max keys >= from (> from when after), in order, into out from index 0; how many. Each call finds its
   * place again, so a caller that passes its last key back with after = true walks every key present throughout,
   * whatever changed between calls, and allocates nothing (lists of a million pods go through here).
   */
  fill(from: string, after: boolean, out: string[], max: number): number {
    const chunks = this.chunks;
    if (chunks.length === 0) return 0;
    let ci = from ? this.chunkFor(from) : 0;
    let i = from ? lowerBound(chunks[ci], from) : 0;
    if (after && chunks[ci][i] === from) i++;
    let n = 0;
    for (; ci < chunks.length && n < max; ci++, i = 0) {
      const chunk = chunks[ci];
      for (; i < chunk.length && n < max; i++) out[n++] = chunk[i];
    }
    return n;
  }

  /** How many keys are >= from: O(chunks), so lists can report remainingItemCount without a scan. */
  countFrom(from: string): number {
    const chunks = this.chunks;
    if (chunks.length === 0) return 0;
    const ci = this.chunkFor(from);
    let n = chunks[ci].length - lowerBound(chunks[ci], from);
    for (let j = ci + 1; j < chunks.length; j++) n += chunks[j].length;
    return n;
  }

  /** Keys starting with prefix, in order. */
  *withPrefix(prefix: string): IterableIterator<string> {
    for (const k of this.from(prefix)) {
      if (!k.startsWith(prefix)) return;
      yield k;
    }
  }
}

export function lowerBound(arr: readonly string[], key: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
