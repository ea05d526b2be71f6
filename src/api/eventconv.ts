// core/v1 Event <-> events.k8s.io/v1 Event. Both are views of the same stored events (the apiserver converts
// through its internal type); the field renames follow k8s.io/kubernetes pkg/apis/events/v1 conversion.

import type { KubeObject } from './meta.js';

type Obj = Record<string, any>;

export function coreToEventsV1(ev: Obj): KubeObject {
  const out: Obj = { kind: 'Event', apiVersion: 'events.k8s.io/v1', metadata: ev.metadata };
  copy(ev, 'eventTime', out, 'eventTime', null);
  if (ev.series) out.series = { count: ev.series.count, lastObservedTime: ev.series.lastObservedTime };
  copy(ev, 'reportingComponent', out, 'reportingController');
  copy(ev, 'reportingInstance', out, 'reportingInstance');
  copy(ev, 'action', out, 'action');
  copy(ev, 'reason', out, 'reason');
  copy(ev, 'involvedObject', out, 'regarding');
  copy(ev, 'related', out, 'related');
  copy(ev, 'message', out, 'note');
  copy(ev, 'type', out, 'type');
  if (ev.source && (ev.source.component || ev.source.host)) out.deprecatedSource = ev.source;
  copy(ev, 'firstTimestamp', out, 'deprecatedFirstTimestamp');
  copy(ev, 'lastTimestamp', out, 'deprecatedLastTimestamp');
  copy(ev, 'count', out, 'deprecatedCount');
  return out as KubeObject;
}

export function eventsV1ToCore(ev: Obj): KubeObject {
  const out: Obj = { kind: 'Event', apiVersion: 'v1', metadata: ev.metadata };
  copy(ev, 'regarding', out, 'involvedObject');
  copy(ev, 'reason', out, 'reason');
  copy(ev, 'note', out, 'message');
  out.source = ev.deprecatedSource ?? {};
  copy(ev, 'deprecatedFirstTimestamp', out, 'firstTimestamp', null);
  copy(ev, 'deprecatedLastTimestamp', out, 'lastTimestamp', null);
  copy(ev, 'deprecatedCount', out, 'count');
  copy(ev, 'type', out, 'type');
  copy(ev, 'eventTime', out, 'eventTime', null);
  if (ev.series) out.series = { count: ev.series.count, lastObservedTime: ev.series.lastObservedTime };
  copy(ev, 'action', out, 'action');
  copy(ev, 'related', out, 'related');
  copy(ev, 'reportingController', out, 'reportingComponent', '');
  copy(ev, 'reportingInstance', out, 'reportingInstance', '');
  return out as KubeObject;
}

function copy(from: Obj, f: string, to: Obj, t: string, dflt?: unknown): void {
  const v = from[f];
  if (v !== undefined && v !== '') to[t] = v;
  else if (dflt !== undefined) to[t] = dflt;
}
