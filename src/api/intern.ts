// One copy of a string that many cached objects carry: a namespace, a node's name, "default-scheduler", "Running".
// Strings read from bytes (the intake) or longer than 10 characters (JSON.parse shares only shorter ones) are a
// fresh copy per object, and a million cached pods held ~170 bytes each of such copies in their selectable fields:
// seven strings a pod that every full mark of the heap visits and every young collection that promotes them copies.

/** Distinct strings kept at most; past it the table starts over (values seen since are kept again). */
const MAX_ENTRIES = 1 << 16;

let table = new Map<string, string>();

/**
 * The process's copy of s. Meant for values many objects share: a value of its own per object (a name, a uid)
 * would only fill the table, which is bounded so that those cost lookups and never memory.
 */
export function intern(s: string): string {
  const have = table.get(s);
  if (have !== undefined) return have;
  // Copies handed out before stay valid: the objects holding them keep them alive, the table only forgets them.
  if (table.size >= MAX_ENTRIES) table = new Map();
  table.set(s, s);
  return s;
}
