// What an audit backend offers the auditor: one serialized event at a time, either durably (the caller waits until
// the event is stored, and learns if it could not be) or in the background (failures are the backend's to count).

export interface Backend {
  /** The plugin label of apiserver_audit_error_total ("log", "webhook"). */
  readonly plugin: string;
  /** Whether a durable write to this backend holds back the request (the log always; a webhook in blocking mode). */
  readonly gates: boolean;
  /**
   * Stores one event (a JSON line without its newline). durable: the promise settles once the event is stored
   * or known lost. Otherwise undefined is returned and the event is written with the next batch.
   */
  write(line: string, durable: boolean): Promise<void> | undefined;
  /** Writes everything queued so far. */
  flush(): Promise<void>;
  /** Flushes, then releases files and connections; later writes fail. */
  close(): Promise<void>;
}

/** Logs a backend failure at most once per interval, so an unwritable log does not flood the gateway's own log. */
export function throttledReporter(intervalMs: number, report: (err: unknown, lost: number) => void): (err: unknown, lost: number) => void {
  let last = 0;
  let suppressed = 0;
  return (err, lost) => {
    const now = Date.now();
    if (now - last < intervalMs) {
      suppressed += lost;
      return;
    }
    last = now;
    report(err, lost + suppressed);
    suppressed = 0;
  };
}
