// Mutated documents for the JSON fuzzers: a valid document with a few random edits is mostly invalid in one place,
// which is where scanners disagree if they do.

/** doc with 1-3 edits at random places: a unit inserted, a byte deleted, or a byte replaced by a unit. */
export function mutated(rnd: () => number, doc: Buffer, unit: () => Buffer): Buffer {
  let b = doc;
  const edits = 1 + Math.floor(rnd() * 3);
  for (let m = 0; m < edits; m++) {
    const at = Math.floor(rnd() * (b.length + 1));
    const op = rnd();
    const u = unit();
    if (op < 0.4) b = Buffer.concat([b.subarray(0, at), u, b.subarray(at)]);
    else if (op < 0.7) b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
    else b = Buffer.concat([b.subarray(0, at), u, b.subarray(at + 1)]);
  }
  return b;
}
