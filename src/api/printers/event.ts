// The Event printer (printEvent, k8s.io/kubernetes pkg/printers/internalversion, 1.34). Both core/v1 and
// events.k8s.io/v1 Events are stored as the internal core Event, so the apiserver prints both with this one printer;
// events.k8s.io objects are first mapped to their core/v1 form.

import { translateTimestampSince } from '../duration.js';
import { eventsV1ToCore } from '../eventconv.js';
import { NAME_DESC, col, nameOf } from './builtins.js';
import type { Printer } from './index.js';

const COLUMNS = [
  col('Last Seen', 'string', 'The time at which the most recent occurrence of this event was recorded.'),
  col('Type', 'string', 'Type of this event (Normal, Warning), new types could be added in the future'),
  col('Reason', 'string', "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
  col('Object', 'string', 'The object that this event is about.'),
  col('Subobject', 'string', 'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.', 1),
  col('Source', 'string', 'The component reporting this event. Should be a short machine understandable string.', 1),
  col('Message', 'string', 'A human-readable description of the status of this operation.'),
  col('First Seen', 'string', 'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)', 1),
  col('Count', 'string', 'The number of times this event has occurred.', 1),
  col('Name', 'string', NAME_DESC, 1, 'name'),
];

/** formatEventSource: component (or reportingController), then ", host" (or reportingInstance) when set. */
function eventSource(ev: any): string {
  const component = ev?.source?.component || ev?.reportingComponent || '';
  const instance = ev?.source?.host || ev?.reportingInstance || '';
  return instance ? `${component}, ${instance}` : component;
}

function coreEventCells(ev: any, nowMs: number): unknown[] {
  const first = ev?.firstTimestamp
    ? translateTimestampSince(ev.firstTimestamp, nowMs)
    : translateTimestampSince(ev?.eventTime, nowMs);
  let last = ev?.lastTimestamp ? translateTimestampSince(ev.lastTimestamp, nowMs) : first;
  let count: number = ev?.count ?? 0;
  if (ev?.series) {
    last = translateTimestampSince(ev.series.lastObservedTime, nowMs);
    count = ev.series.count ?? 0;
  } else if (count === 0) {
    // Singleton events of the events.k8s.io API carry no count.
    count = 1;
  }
  const involved = ev?.involvedObject ?? {};
  const kind = String(involved.kind ?? '').toLowerCase();
  const target = involved.name ? `${kind}/${involved.name}` : kind;
  return [
    last,
    ev?.type ?? '',
    ev?.reason ?? '',
    target,
    involved.fieldPath ?? '',
    eventSource(ev),
    String(ev?.message ?? '').trim(),
    first,
    count,
    nameOf(ev),
  ];
}

export const CORE_EVENT_PRINTER: Printer = { columns: COLUMNS, cells: coreEventCells };

export const EVENTS_V1_EVENT_PRINTER: Printer = {
  columns: COLUMNS,
  cells: (ev, nowMs) => coreEventCells(eventsV1ToCore(ev), nowMs),
};
