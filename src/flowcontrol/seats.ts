// How many seats a request occupies while it executes (k8s.io/apiserver/pkg/util/flowcontrol/request): one, except
// LISTs (and watches that ask for their initial events as a list would return them), which cost a seat per 100
// objects they will go through, up to the level's maximum. The gateway learns the count from its cache; a LIST
// the cache does not serve is forwarded, costs the gateway little, and takes one seat (kube does the same for
// resources whose count it does not know).

import type { RequestContext } from '../server/context.js';

export const MINIMUM_SEATS = 1;
/** kube's MaximumSeats: no request takes more than 10 seats. */
export const MAXIMUM_SEATS = 10;
const OBJECTS_PER_SEAT = 100;
/** A level's widest request: 15% of its nominal seats, at most nominal / handSize (max_seats in apf_controller.go). */
const PRIORITY_LEVEL_MAX_SEATS_PERCENT = 0.15;

/** The number of objects a LIST (or initial-events watch) will go through, when the cache can tell. */
export type EstimateObjects = (ctx: RequestContext) => number | undefined;

/** The widest request a queuing level admits; levels without queues fall back to MAXIMUM_SEATS. */
export function priorityLevelMaxSeats(nominalCL: number, handSize: number | undefined): number {
  if (!handSize) return MAXIMUM_SEATS;
  const m = Math.max(1, Math.min(Math.ceil(nominalCL * PRIORITY_LEVEL_MAX_SEATS_PERCENT), Math.trunc(nominalCL / handSize)));
  return Math.min(m, MAXIMUM_SEATS);
}

export function estimateSeats(ctx: RequestContext, maxSeats: number, estimateObjects: EstimateObjects | undefined): number {
  const info = ctx.info;
  if (info.verb === 'watch') {
    if (ctx.url.searchParams.get('sendInitialEvents') !== 'true') return MINIMUM_SEATS;
  } else if (info.verb !== 'list') {
    return MINIMUM_SEATS;
  }
  // A LIST narrowed to one name (fieldSelector=metadata.name=x) is served like a GET.
  if (info.name !== '' || !estimateObjects) return MINIMUM_SEATS;
  const n = estimateObjects(ctx);
  if (n === undefined || !(n > 0)) return MINIMUM_SEATS;
  return Math.min(Math.max(Math.ceil(n / OBJECTS_PER_SEAT), MINIMUM_SEATS), maxSeats);
}
