// The Retry-After a rejected request is told, per priority level, as kube's droppedRequestsTracker computes it
// (k8s.io/apiserver/pkg/util/flowcontrol/dropped_requests_tracker.go): it starts at 1s, doubles (up to 32s) when at
// least 3 x retryAfter requests were dropped in the last retryAfter seconds, and shrinks by a second when fewer
// than retryAfter were. Clients that honour it back off as TCP does under congestion.

const MAX_RETRY_AFTER = 32;

interface Stats {
  history: { unix: number; count: number }[];
  currentUnix: number;
  currentCount: number;
  retryAfter: number;
  retryAfterUpdateUnix: number;
}

export interface DroppedRequestsTracker {
  record(priorityLevel: string): void;
  retryAfter(priorityLevel: string): number;
}

export function newDroppedRequestsTracker(nowMs: () => number = Date.now): DroppedRequestsTracker {
  const levels = new Map<string, Stats>();
  return {
    record(pl) {
      const unix = Math.floor(nowMs() / 1000);
      let s = levels.get(pl);
      if (!s) levels.set(pl, (s = { history: [], currentUnix: 0, currentCount: 0, retryAfter: 1, retryAfterUpdateUnix: 0 }));
      if (s.currentUnix === unix) {
        s.currentCount++;
        return;
      }
      // A new second: file the last one and reconsider retryAfter from the history so far.
      s.history.push({ unix: s.currentUnix, count: s.currentCount });
      let start = 0;
      while (start < s.history.length && s.currentUnix - s.history[start]!.unix > MAX_RETRY_AFTER) start++;
      if (start > 0) s.history.splice(0, start);
      s.currentUnix = unix;
      s.currentCount = 1;
      update(s, unix);
    },
    retryAfter(pl) {
      return levels.get(pl)?.retryAfter ?? 1;
    },
  };
}

function update(s: Stats, unix: number): void {
  let dropped = 0;
  for (let i = s.history.length - 1; i >= 0; i--) {
    const h = s.history[i]!;
    if (unix - h.unix > s.retryAfter) break;
    if (h.unix < unix) dropped += h.count;
  }
  if (unix - s.retryAfterUpdateUnix >= s.retryAfter && dropped >= 3 * s.retryAfter) {
    s.retryAfter = Math.min(s.retryAfter * 2, MAX_RETRY_AFTER);
    s.retryAfterUpdateUnix = unix;
    return;
  }
  if (dropped < s.retryAfter && s.retryAfter > 1) s.retryAfter--;
}
