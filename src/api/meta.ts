// Object metadata helpers and the name/label validation rules of k8s.io/apimachinery/pkg/util/validation and
// pkg/api/validation (objectmeta.go), with their exact messages, so a create the sim rejects is rejected with the
// same 422 a real kube-apiserver gives.

import { fieldForbidden, fieldInvalid, fieldRequired, fieldTooLong, type FieldError } from './status.js';

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: any[];
  finalizers?: string[];
  managedFields?: any[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [k: string]: unknown;
}

/** The storage key suffix lists are ordered by: "ns/name" for namespaced objects, "name" otherwise. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** metav1.Time as JSON: RFC 3339 in UTC with seconds precision. */
export function nowRfc3339(): string {
  return toRfc3339(new Date());
}

export function toRfc3339(d: Date): string {
  return d.toISOString().slice(0, 19) + 'Z';
}

// ---------------------------------------------------------------------------------------------------------------
// k8s.io/apimachinery/pkg/util/validation: each returns a list of messages, empty when valid.

/** validation.MaxLenError. */
export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

/** validation.EmptyError. */
export function emptyError(): string {
  return 'must be non-empty';
}

/** validation.RegexError: note the doubled space after each example's comma, as Go builds it. */
export function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  let out = msg + ' (e.g. ';
  for (let i = 0; i < examples.length; i++) {
    if (i > 0) out += ' or ';
    out += `'${examples[i]}', `;
  }
  return out + `regex used for validation is '${fmt}')`;
}

const QUALIFIED_NAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QUALIFIED_NAME_ERR =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_RE = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const QUALIFIED_NAME_MAX = 63;

const LABEL_VALUE_FMT = `(${QUALIFIED_NAME_FMT})?`;
const LABEL_VALUE_ERR =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);
export const LABEL_VALUE_MAX_LENGTH = 63;

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_LABEL_ERR =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_RE = new RegExp(`^${DNS1123_LABEL_FMT}$`);
export const DNS1123_LABEL_MAX_LENGTH = 63;

const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_ERR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;

const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const DNS1035_LABEL_ERR =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_LABEL_RE = new RegExp(`^${DNS1035_LABEL_FMT}$`);
export const DNS1035_LABEL_MAX_LENGTH = 63;

/** Go measures strings in bytes. */
function byteLength(s: string): number {
  // Fast path: every validated string that passes is ASCII.
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

/** validation.IsQualifiedName: `[prefix/]name`, as label keys and annotation keys are. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  switch (parts.length) {
    case 1:
      name = parts[0]!;
      break;
    case 2: {
      const prefix = parts[0]!;
      name = parts[1]!;
      if (prefix.length === 0) errs.push('prefix part ' + emptyError());
      else for (const m of isDNS1123Subdomain(prefix)) errs.push('prefix part ' + m);
      break;
    }
    default:
      errs.push(
        'a qualified name ' +
          regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc') +
          " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      );
      return errs;
  }
  if (name.length === 0) errs.push('name part ' + emptyError());
  else if (byteLength(name) > QUALIFIED_NAME_MAX) errs.push('name part ' + maxLenError(QUALIFIED_NAME_MAX));
  if (!QUALIFIED_NAME_RE.test(name)) {
    errs.push('name part ' + regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc'));
  }
  return errs;
}

/** validation.IsValidLabelValue. */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH));
  if (!LABEL_VALUE_RE.test(value)) errs.push(regexError(LABEL_VALUE_ERR, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  return errs;
}

/** validation.IsDNS1123Label. */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!DNS1123_LABEL_RE.test(value)) {
    // A valid subdomain that is not a valid label (length already checked) can only be failing on dots.
    if (DNS1123_SUBDOMAIN_RE.test(value)) errs.push('must not contain dots');
    else errs.push(regexError(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, 'my-name', '123-abc'));
  }
  return errs;
}

/** validation.IsDNS1123Subdomain. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!DNS1123_SUBDOMAIN_RE.test(value)) errs.push(regexError(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

/** validation.IsDNS1035Label (Service names). */
export function isDNS1035Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1035_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1035_LABEL_MAX_LENGTH));
  if (!DNS1035_LABEL_RE.test(value)) errs.push(regexError(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, 'my-name', 'abc-123'));
  return errs;
}

/** apimachinery/pkg/api/validation/path.IsValidPathSegmentName: what may appear as one URL path segment. */
export function isValidPathSegmentName(name: string): string[] {
  if (name === '.' || name === '..') return [`may not be '${name}'`];
  const errs: string[] = [];
  if (name.includes('/')) errs.push("may not contain '/'");
  if (name.includes('%')) errs.push("may not contain '%'");
  return errs;
}

// ---------------------------------------------------------------------------------------------------------------
// Object names (pkg/api/validation/generic.go). `prefix` is true when validating a generateName.

export type NameValidator = (name: string, prefix: boolean) => string[];

/** generateName may end in '-' since a random suffix follows; mask it like maskTrailingDash. */
function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith('-') ? name.slice(0, -1) + 'a' : name;
}

export const nameIsDNSSubdomain: NameValidator = (name, prefix) => isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);
export const nameIsDNSLabel: NameValidator = (name, prefix) => isDNS1123Label(prefix ? maskTrailingDash(name) : name);
export const nameIsDNS1035Label: NameValidator = (name, prefix) => isDNS1035Label(prefix ? maskTrailingDash(name) : name);
/** path.ValidatePathSegmentName: RBAC objects and a few others only need to be addressable. */
export const nameIsPathSegment: NameValidator = (name, prefix) => (prefix ? [] : isValidPathSegmentName(name));

/** ValidateNamespaceName: namespaces are DNS labels. */
export const validateNamespaceName: NameValidator = nameIsDNSLabel;

/** Messages for an object name under the given rule (default: DNS subdomain, what most resources use). */
export function validateObjectName(name: string, validator: NameValidator = nameIsDNSSubdomain): string[] {
  return validator(name, false);
}

/** Which name rule the registry strategy of a built-in resource applies. */
export function nameValidatorFor(group: string, resource: string): NameValidator {
  if (group === '') {
    if (resource === 'namespaces') return nameIsDNSLabel;
    if (resource === 'services') return nameIsDNS1035Label;
  }
  if (group === 'rbac.authorization.k8s.io') return nameIsPathSegment;
  return nameIsDNSSubdomain;
}

const TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10);

/**
 * ValidateObjectMetaAccessor for a create: name/generateName, namespace presence and shape, generation, labels and
 * annotations. Field paths are rooted at `fldPath` ("metadata").
 */
export function validateObjectMeta(
  meta: ObjectMeta,
  namespaced: boolean,
  validator: NameValidator = nameIsDNSSubdomain,
  fldPath = 'metadata',
): FieldError[] {
  const errs: FieldError[] = [];
  const generateName = meta.generateName ?? '';
  if (generateName !== '') {
    for (const msg of validator(generateName, true)) errs.push(fieldInvalid(`${fldPath}.generateName`, generateName, msg));
  }
  const name = meta.name ?? '';
  if (name === '') errs.push(fieldRequired(`${fldPath}.name`, 'name or generateName is required'));
  else for (const msg of validator(name, false)) errs.push(fieldInvalid(`${fldPath}.name`, name, msg));

  const ns = meta.namespace ?? '';
  if (namespaced) {
    if (ns === '') errs.push(fieldRequired(`${fldPath}.namespace`, ''));
    else for (const msg of validateNamespaceName(ns, false)) errs.push(fieldInvalid(`${fldPath}.namespace`, ns, msg));
  } else if (ns !== '') {
    errs.push(fieldForbidden(`${fldPath}.namespace`, 'not allowed on this type'));
  }

  if (meta.generation !== undefined && meta.generation < 0) {
    errs.push(fieldInvalid(`${fldPath}.generation`, meta.generation, 'must be greater than or equal to 0'));
  }
  errs.push(...validateLabels(meta.labels, `${fldPath}.labels`));
  errs.push(...validateAnnotations(meta.annotations, `${fldPath}.annotations`));
  return errs;
}

/** v1validation.ValidateLabels: every error is reported on the map's path, not the key's. */
export function validateLabels(labels: Record<string, string> | undefined, fldPath: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!labels) return errs;
  for (const k of Object.keys(labels)) {
    for (const msg of isQualifiedName(k)) errs.push(fieldInvalid(fldPath, k, msg));
    const v = labels[k]!;
    for (const msg of isValidLabelValue(v)) errs.push(fieldInvalid(fldPath, v, msg));
  }
  return errs;
}

/** ValidateAnnotations: keys are qualified names ignoring case; the total size is capped at 256 KiB. */
export function validateAnnotations(annotations: Record<string, string> | undefined, fldPath: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!annotations) return errs;
  let total = 0;
  for (const k of Object.keys(annotations)) {
    for (const msg of isQualifiedName(k.toLowerCase())) errs.push(fieldInvalid(fldPath, k, msg));
    total += byteLength(k) + byteLength(annotations[k]!);
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT_B) errs.push(fieldTooLong(fldPath, '', TOTAL_ANNOTATION_SIZE_LIMIT_B));
  return errs;
}
