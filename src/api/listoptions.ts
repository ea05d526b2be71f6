// List/watch query parameters decoded, defaulted and validated in the order k8s.io/apiserver's ListResource
// handler does it, so each bad request fails with the same status a kube-apiserver gives:
//   1. DecodeParameters (url.Values -> metav1.ListOptions -> internal): 400 with the parse error
//   2. SetListOptionsDefaults (WatchList): legacy watches from RV ""/"0" become sendInitialEvents=true
//   3. ValidateListOptions: 422 Invalid on ListOptions.meta.k8s.io
//   4. field label conversion: 400
//   5. name from the path vs. fieldSelector metadata.name: 400

import { fieldForbidden, fieldNotSupported, goQuote, newBadRequest, newInvalid, type FieldError } from './status.js';
import { parseLabelSelector, type LabelSelector } from './labels.js';
import { convertFieldSelector, oneTermEqualSelector, parseFieldSelector, type CustomResourceFields, type FieldSelector } from './fields.js';

export interface ListOptions {
  labelSelector: LabelSelector;
  /** After field label conversion (e.g. spec.host -> spec.nodeName), ready to match selectable fields. */
  fieldSelector: FieldSelector;
  labelSelectorRaw: string;
  fieldSelectorRaw: string;
  watch: boolean;
  allowWatchBookmarks: boolean;
  resourceVersion: string;
  resourceVersionMatch: '' | 'Exact' | 'NotOlderThan';
  timeoutSeconds?: number;
  /** 0 means no limit. */
  limit: number;
  continue: string;
  /** Set explicitly, or defaulted to true for watches from RV ""/"0" when WatchList is on (see initialEventsDefaulted). */
  sendInitialEvents?: boolean;
  /** True when sendInitialEvents/resourceVersionMatch came from WatchList defaulting, not from the client. */
  initialEventsDefaulted: boolean;
}

export interface ListTarget {
  group: string;
  version: string;
  resource: string;
  /** The object name when the path names one (legacy /watch/.../name). */
  name?: string;
  /** Custom resources use the apiextensions field rules. */
  crd?: CustomResourceFields;
}

export interface ListOptionsConfig {
  /** The WatchList feature gate (on in 1.32+): defaults legacy watches to sendInitialEvents. */
  watchList?: boolean;
  /** Force watch semantics (the legacy /watch/ path prefix). */
  forceWatch?: boolean;
}

/** runtime.Convert_Slice_string_To_bool: only "false" (any case) and "0" are false; even "" is true. */
function queryBool(v: string): boolean {
  return !(v === '0' || v.toLowerCase() === 'false');
}

const INT_RE = /^[+-]?[0-9]+$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** strconv.ParseInt(v, 10, 64) with Go's error text. */
function queryInt64(v: string): number {
  if (!INT_RE.test(v)) throw new Error(`strconv.ParseInt: parsing ${goQuote(v)}: invalid syntax`);
  const b = BigInt(v);
  if (b < INT64_MIN || b > INT64_MAX) throw new Error(`strconv.ParseInt: parsing ${goQuote(v)}: value out of range`);
  return Number(b);
}

interface Decoded {
  labelSelector: string;
  fieldSelector: string;
  watch: boolean;
  allowWatchBookmarks: boolean;
  resourceVersion: string;
  resourceVersionMatch: string;
  timeoutSeconds?: number;
  limit: number;
  continue: string;
  sendInitialEvents?: boolean;
}

/** Convert_url_Values_To_v1_ListOptions, field by field in struct order; the first failure wins. */
function decode(q: URLSearchParams): Decoded {
  const d: Decoded = {
    labelSelector: q.get('labelSelector') ?? '',
    fieldSelector: q.get('fieldSelector') ?? '',
    watch: q.has('watch') ? queryBool(q.get('watch')!) : false,
    allowWatchBookmarks: q.has('allowWatchBookmarks') ? queryBool(q.get('allowWatchBookmarks')!) : false,
    resourceVersion: q.get('resourceVersion') ?? '',
    resourceVersionMatch: q.get('resourceVersionMatch') ?? '',
    limit: 0,
    continue: '',
  };
  if (q.has('timeoutSeconds')) d.timeoutSeconds = queryInt64(q.get('timeoutSeconds')!);
  if (q.has('limit')) d.limit = queryInt64(q.get('limit')!);
  d.continue = q.get('continue') ?? '';
  if (q.has('sendInitialEvents')) d.sendInitialEvents = queryBool(q.get('sendInitialEvents')!);
  return d;
}

/** metainternalversion.SetListOptionsDefaults. */
function applyDefaults(d: Decoded, watchList: boolean): boolean {
  if (!watchList) return false;
  if (d.sendInitialEvents !== undefined || d.resourceVersionMatch !== '') return false;
  if (d.watch && (d.resourceVersion === '' || d.resourceVersion === '0')) {
    d.sendInitialEvents = true;
    d.resourceVersionMatch = 'NotOlderThan';
    return true;
  }
  return false;
}

/** validation.ValidateListOptions (apimachinery/pkg/apis/meta/internalversion/validation). */
export function validateListOptions(
  o: { watch: boolean; resourceVersion: string; resourceVersionMatch: string; continue: string; sendInitialEvents?: boolean },
  watchList = true,
): FieldError[] {
  const errs: FieldError[] = [];
  const match = o.resourceVersionMatch;
  if (o.watch) {
    if (o.sendInitialEvents !== undefined) {
      if (match !== 'NotOlderThan') {
        errs.push(fieldForbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
      }
      if (!watchList) {
        errs.push(fieldForbidden('sendInitialEvents', 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled'));
      }
    }
    if (match !== '') {
      if (o.sendInitialEvents === undefined) {
        errs.push(fieldForbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
      }
      if (match !== 'NotOlderThan') errs.push(fieldNotSupported('resourceVersionMatch', match, ['NotOlderThan']));
      if (o.continue !== '') errs.push(fieldForbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    }
    return errs;
  }
  if (match !== '') {
    if (o.resourceVersion === '') {
      errs.push(fieldForbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    }
    if (o.continue !== '') errs.push(fieldForbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== 'Exact' && match !== 'NotOlderThan') {
      errs.push(fieldNotSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']));
    }
    if (match === 'Exact' && o.resourceVersion === '0') {
      errs.push(fieldForbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
    }
  }
  if (o.sendInitialEvents !== undefined) errs.push(fieldForbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  return errs;
}

/**
 * Decode, default and validate list/watch parameters for `target`. Throws StatusError: 400 for undecodable
 * numbers or selectors and unsupported field labels, 422 (ListOptions.meta.k8s.io "") for invalid combinations.
 */
export function parseListOptions(q: URLSearchParams, target: ListTarget, config: ListOptionsConfig = {}): ListOptions {
  const watchList = config.watchList ?? true;
  let d: Decoded;
  let labelSelector: LabelSelector;
  let fieldSelector: FieldSelector;
  try {
    d = decode(q);
    labelSelector = parseLabelSelector(d.labelSelector);
    fieldSelector = parseFieldSelector(d.fieldSelector);
  } catch (e) {
    throw newBadRequest((e as Error).message);
  }
  const defaulted = applyDefaults(d, watchList);
  const errs = validateListOptions(d, watchList);
  if (errs.length > 0) throw newInvalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', errs);

  fieldSelector = convertFieldSelector(fieldSelector, target.group, target.version, target.resource, target.crd);

  if (target.name !== undefined && target.name !== '') {
    if (!fieldSelector.empty) {
      if (fieldSelector.exact('metadata.name') !== target.name) {
        throw newBadRequest("fieldSelector metadata.name doesn't match requested name");
      }
    } else {
      fieldSelector = oneTermEqualSelector('metadata.name', target.name);
    }
  }

  const opts: ListOptions = {
    labelSelector,
    fieldSelector,
    labelSelectorRaw: d.labelSelector,
    fieldSelectorRaw: d.fieldSelector,
    // The legacy /watch/ prefix forces a watch only after defaulting and validation saw watch=false, as in Go.
    watch: d.watch || config.forceWatch === true,
    allowWatchBookmarks: d.allowWatchBookmarks,
    resourceVersion: d.resourceVersion,
    resourceVersionMatch: d.resourceVersionMatch as ListOptions['resourceVersionMatch'],
    limit: d.limit,
    continue: d.continue,
    initialEventsDefaulted: defaulted,
  };
  if (d.timeoutSeconds !== undefined) opts.timeoutSeconds = d.timeoutSeconds;
  if (d.sendInitialEvents !== undefined) opts.sendInitialEvents = d.sendInitialEvents;
  return opts;
}
